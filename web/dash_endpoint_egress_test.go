package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/hookline/hookline/worker/sender/sendertest"
)

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// TestDashboardEgressForm: operators set an endpoint's egress on a form of
// its own. A certificate that does not parse or a key of another
// certificate is a 422 naming the field; saved, the endpoint page shows the
// proxy, the CA's subject, the certificate's subject and expiry and the
// credential type, never the key or the password; empty secret fields keep
// the stored ones; the audit log records the change without a secret; a
// viewer may not open the form.
func TestDashboardEgressForm(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Bank")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "bank", "kind": "webhook", "url": "https://hooks.bank.invalid/in"})
	ca := sendertest.NewCA(t, "bank private root")
	clientCA := sendertest.NewCA(t, "bank client root")
	cert := clientCA.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true, NotAfter: time.Now().Add(90 * 24 * time.Hour)})
	other := clientCA.Issue(t, sendertest.Leaf{CommonName: "other", Client: true})
	page := fmt.Sprintf("/endpoints/%d", ep.ID)
	op := env.signIn(base, "ops@example.com", "operator")

	_, doc := op.get(page)
	if got := text(testid(doc, "egress-proxy")); got != "default: direct" {
		t.Fatalf("proxy %q before any setting", got)
	}
	if got := text(testid(doc, "egress-credential")); got != "none" {
		t.Fatalf("credential %q before any setting", got)
	}
	if _, ok := testid(doc, "edit-egress").Attr("href"); !ok {
		t.Fatal("no link to the egress form")
	}
	res, doc := op.get(page + "/egress")
	if res.StatusCode != http.StatusOK || testid(doc, "egress-form").Length() != 1 {
		t.Fatalf("GET the form: %d", res.StatusCode)
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"proxy": {"direct"}, "ca_bundle": {string(ca.PEM)}, "client_cert": {string(cert.CertPEM)},
			"client_key": {string(cert.KeyPEM)}, "auth_type": {"basic"}, "basic_username": {"partner"}, "basic_password": {"pa55-word"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name, field string
		form        url.Values
	}{
		{"key of another certificate", "client_key", form("client_key", string(other.KeyPEM))},
		{"certificate does not parse", "client_cert", form("client_cert", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{"CA bundle holds a key", "ca_bundle", form("ca_bundle", string(cert.KeyPEM))},
		{"proxy with credentials", "proxy_url", form("proxy", "other", "proxy_url", "http://u:p@127.0.0.1:3128")},
		{"basic without password", "basic_password", form("basic_password", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := op.postForm(page+"/egress", tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%d, want 422", res.StatusCode)
			}
			field := doc.Find(`[data-field="` + tc.field + `"] [data-testid=field-error]`)
			if field.Length() != 1 {
				t.Fatalf("no error on %s; summary: %s", tc.field, text(testid(doc, "form-errors")))
			}
			if strings.Contains(doc.Text(), "pa55-word") || strings.Contains(doc.Text(), "PRIVATE KEY-----\nM") {
				t.Fatal("the form shows a secret back")
			}
		})
	}

	res, doc = op.postForm(page+"/egress", form())
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != page {
		t.Fatalf("save: %d at %s: %s", res.StatusCode, res.Request.URL, text(testid(doc, "form-errors")))
	}
	panel := testid(doc, "egress")
	for id, want := range map[string]string{
		"egress-proxy":       "direct",
		"egress-ca":          "CN=bank private root",
		"egress-client-cert": "CN=hookline,O=hookline tests · expires " + cert.TLS.Leaf.NotAfter.UTC().Format(time.DateOnly),
		"egress-credential":  "basic · username partner",
	} {
		if got := text(panel.Find(`[data-testid="` + id + `"]`)); !strings.Contains(got, want) {
			t.Fatalf("%s %q, want %q", id, got, want)
		}
	}
	if html, _ := doc.Html(); strings.Contains(html, "pa55-word") || strings.Contains(html, "PRIVATE KEY") {
		t.Fatal("the endpoint page shows a secret")
	}
	if testid(doc, "client-cert-expiry").Length() != 0 {
		t.Fatal("a warning for a certificate 90 days from expiry")
	}
	stored, err := env.srv.q.EndpointEgressGet(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("empty secret fields keep the stored ones", func(t *testing.T) {
		res, _ := op.postForm(page+"/egress", form("client_cert", "", "client_key", "", "basic_password", "", "proxy", "default"))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("save: %d", res.StatusCode)
		}
		after, _ := env.srv.q.EndpointEgressGet(context.Background(), ep.ID)
		if string(after.ClientKey) != string(stored.ClientKey) || string(after.AuthSecret) != string(stored.AuthSecret) || after.Proxy != "" {
			t.Fatal("the stored key or password was not kept")
		}
		_, doc := op.get(page + "/egress")
		if strings.Contains(doc.Text(), "pa55-word") || strings.Contains(doc.Text(), "PRIVATE KEY-----\nM") {
			t.Fatal("the form shows a stored secret")
		}
		if !strings.Contains(doc.Text(), "Stored: CN=hookline") {
			t.Fatal("the form does not say which certificate is stored")
		}
	})
	t.Run("audited without secrets", func(t *testing.T) {
		var n int
		var details string
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*), string_agg(details::text, ' ') FROM audit_log
			WHERE action = 'endpoint.egress_update' AND target_id = $1`, fmt.Sprint(ep.ID)).Scan(&n, &details); err != nil {
			t.Fatal(err)
		}
		if n != 2 || !strings.Contains(details, "CN=hookline") || strings.Contains(details, "pa55-word") || strings.Contains(details, "PRIVATE") {
			t.Fatalf("%d audit entries: %s", n, details)
		}
	})
	t.Run("expiry warned 30 and 7 days ahead", func(t *testing.T) {
		for _, tc := range []struct {
			days int
			tone string
		}{{20, "warn"}, {5, "critical"}} {
			c := clientCA.Issue(t, sendertest.Leaf{CommonName: "soon", Client: true, NotAfter: time.Now().Add(time.Duration(tc.days)*24*time.Hour + time.Hour)})
			if res, _ := op.postForm(page+"/egress", form("client_cert", string(c.CertPEM), "client_key", string(c.KeyPEM), "basic_password", "")); res.StatusCode != http.StatusOK {
				t.Fatalf("save: %d", res.StatusCode)
			}
			_, doc := op.get(page)
			w := testid(doc, "client-cert-expiry")
			if tone, _ := w.Attr("data-tone"); tone != tc.tone || !strings.Contains(w.Text(), fmt.Sprintf("%d days", tc.days)) {
				t.Fatalf("%d days ahead: tone %q, %q", tc.days, tone, text(w))
			}
		}
	})
	t.Run("viewers may not", func(t *testing.T) {
		viewer := env.signIn(base, "viewer@example.com", "viewer")
		if res, _ := viewer.get(page + "/egress"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("viewer GET: %d", res.StatusCode)
		}
		_, doc := viewer.get(page)
		if testid(doc, "edit-egress").Length() != 0 {
			t.Fatal("a viewer is offered the form")
		}
	})
}

// TestTestFireEgress: the dashboard's test fire leaves as a delivery does:
// to a receiver behind a private CA that requires a client certificate it
// fails without the endpoint's egress settings and succeeds with them,
// showing TLS, the certificate's subject and the credential type; to
// another URL on the edit form it presents neither certificate nor
// credential (a stored credential goes only to its saved URL).
func TestTestFireEgress(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	base := env.server()
	pid := env.createPartner("Bank")
	ca := sendertest.NewCA(t, "bank private root")
	clientCA := sendertest.NewCA(t, "bank client root")
	var auth []string
	rcv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		auth = append(auth, r.Header.Get("Authorization"))
		io.WriteString(w, "ok "+r.TLS.PeerCertificates[0].Subject.CommonName)
	}), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = clientCA.Pool()
	})
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "bank", "kind": "webhook", "url": rcv.URL + "/in"})
	page := fmt.Sprintf("/endpoints/%d", ep.ID)
	op := env.signIn(base, "ops@example.com", "operator")
	fire := func() *goquery.Document {
		t.Helper()
		op.get(page)
		res, doc := op.htmx(http.MethodPost, page+"/test", url.Values{})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("test fire: %d", res.StatusCode)
		}
		return doc
	}
	doc := fire()
	if got := text(testid(doc, "test-result-view")); !strings.Contains(got, "tls") {
		t.Fatalf("without egress settings: %s", got)
	}

	cert := clientCA.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true})
	res, _ := op.postForm(page+"/egress", url.Values{"proxy": {"direct"}, "ca_bundle": {string(ca.PEM)},
		"client_cert": {string(cert.CertPEM)}, "client_key": {string(cert.KeyPEM)},
		"auth_type": {"basic"}, "basic_username": {"partner"}, "basic_password": {"pw"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("save egress: %d", res.StatusCode)
	}
	doc = fire()
	if got := text(testid(doc, "test-result-view")); !strings.Contains(got, "ok") || !strings.Contains(text(testid(doc, "test-excerpt")), "ok hookline") {
		t.Fatalf("with egress settings: %s", got)
	}
	for id, want := range map[string]string{
		"test-proxy": "direct", "test-tls": "TLS 1.3", "test-client-cert": "CN=hookline,O=hookline tests", "test-credential": "basic",
	} {
		if got := text(testid(doc, id)); !strings.Contains(got, want) {
			t.Fatalf("%s %q, want %q", id, got, want)
		}
	}
	if len(auth) != 1 || !strings.HasPrefix(auth[0], "Basic ") {
		t.Fatalf("receiver saw Authorization %q", auth)
	}

	t.Run("another URL on the edit form gets no certificate or credential", func(t *testing.T) {
		otherRcv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.TLS.PeerCertificates) > 0 || r.Header.Get("Authorization") != "" {
				t.Errorf("another URL got certificate %d, Authorization %q", len(r.TLS.PeerCertificates), r.Header.Get("Authorization"))
			}
		}), func(c *tls.Config) { c.ClientAuth = tls.RequestClientCert })
		res, doc := op.htmx(http.MethodPost, "/endpoints/test-fire", url.Values{"endpoint_id": {fmt.Sprint(ep.ID)}, "kind": {"webhook"},
			"url": {otherRcv.URL + "/in"}, "method": {"POST"}})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("form test fire: %d", res.StatusCode)
		}
		if got := text(testid(doc, "test-client-cert")); got != "none" {
			t.Fatalf("client certificate %q to another URL; result %s", got, text(testid(doc, "test-result-view")))
		}
	})
}
