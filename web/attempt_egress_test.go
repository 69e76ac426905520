package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestAttemptEgressShown: how each attempt left is in the API's attempt
// objects, the event page's attempts and the endpoint's attempt log; the
// partner portal shows the same for its own endpoint without the
// operator's proxy address, and its endpoint page says which certificate,
// CA and credential are in use without any value (no username, token URL,
// password or key).
func TestAttemptEgressShown(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	ctx := context.Background()
	pid := env.createPartner("Bank")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "bank", "kind": "webhook", "url": "https://hooks.bank.invalid/in"})
	clientCA := sendertest.NewCA(t, "bank client root")
	cert := clientCA.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true})
	key, _ := env.srv.box.SealEgress(ep.ID, secretbox.EgressClientKey, cert.KeyPEM)
	secret, _ := env.srv.box.SealEgress(ep.ID, secretbox.EgressAuthSecret, []byte("client-s3cret"))
	exp := cert.TLS.Leaf.NotAfter
	if _, err := env.srv.q.EndpointEgressSet(ctx, db.EndpointEgressSetParams{
		EndpointID: ep.ID, Proxy: "http://10.20.30.40:3128", CaBundle: string(clientCA.PEM), ClientCert: string(cert.CertPEM), ClientKey: key,
		ClientCertSubject: "CN=hookline,O=hookline tests", ClientCertExpiresAt: &exp, AuthKind: egress.AuthOAuth2,
		AuthUsername: "client-id-value", AuthSecret: secret, OauthTokenUrl: "https://auth.bank.invalid/token", OauthScopes: []string{"scope-value"},
	}); err != nil {
		t.Fatal(err)
	}
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	del := ev.Deliveries[0].ID
	env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code,
		egress_proxy, tls_version, tls_resumed, client_cert_subject, credential) VALUES
		($1, $2, 1, now() - interval '1 minute', 30, 'transient', 503, 'http://10.20.30.40:3128', 'TLS 1.3', false, 'CN=hookline,O=hookline tests', 'oauth2'),
		($1, $2, 2, now(), 12, 'ok', 200, 'http://10.20.30.40:3128', 'TLS 1.3', true, 'CN=hookline,O=hookline tests', 'oauth2')`, del, ep.ID)
	env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, error_class)
		VALUES ($1, $2, 3, now(), 0, 'permanent', 'blocked_destination')`, del, ep.ID)
	leaks := []string{"client-s3cret", "PRIVATE KEY", "client-id-value", "auth.bank.invalid", "scope-value"}

	t.Run("API", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/events/"+ev.ID, nil)
		mustStatus(t, rec, http.StatusOK)
		type attempt struct {
			Egress *attemptEgressJSON `json:"egress"`
		}
		body := decodeBody[struct {
			Deliveries []struct {
				Attempts []attempt `json:"attempts"`
			} `json:"deliveries"`
		}](t, rec)
		a := body.Deliveries[0].Attempts
		if len(a) != 3 || a[1].Egress == nil || a[2].Egress != nil {
			t.Fatalf("attempts %+v", a)
		}
		e := a[1].Egress
		if e.Proxy != "http://10.20.30.40:3128" || deref(e.TLSVersion) != "TLS 1.3" || !deref(e.TLSResumed) ||
			deref(e.ClientCertSubject) != "CN=hookline,O=hookline tests" || e.Credential != "oauth2" || deref(a[0].Egress.TLSResumed) {
			t.Fatalf("egress %+v", e)
		}
		rec = env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d/attempts", ep.ID), nil)
		mustStatus(t, rec, http.StatusOK)
		if !strings.Contains(rec.Body.String(), `"tls_resumed":true`) {
			t.Fatalf("the attempt log lacks egress: %s", rec.Body.String())
		}
	})
	t.Run("event page", func(t *testing.T) {
		op := env.signIn(base, "ops@example.com", "operator")
		_, doc := op.get("/events/" + ev.ID)
		rows := testid(doc, "attempt")
		if rows.Length() != 3 {
			t.Fatalf("%d attempts", rows.Length())
		}
		second := rows.Eq(1)
		for id, want := range map[string]string{
			"attempt-proxy": "http://10.20.30.40:3128", "attempt-tls": "TLS 1.3, session resumed",
			"attempt-client-cert": "CN=hookline,O=hookline tests", "attempt-credential": "oauth2",
		} {
			if got := text(second.Find(`[data-testid="` + id + `"]`)); got != want {
				t.Fatalf("%s %q, want %q", id, got, want)
			}
		}
		if got := text(rows.Eq(0).Find(`[data-testid="attempt-tls"]`)); got != "TLS 1.3, full handshake" {
			t.Fatalf("first attempt's TLS %q", got)
		}
		if rows.Eq(2).Find(`[data-testid="attempt-egress"]`).Length() != 0 {
			t.Fatal("a refused attempt shows a way out")
		}
	})
	t.Run("portal", func(t *testing.T) {
		p := env.portalSignIn(base, pid, "Bank")
		_, doc := p.get("/portal/events/" + ev.ID)
		html, _ := doc.Html()
		if strings.Contains(html, "10.20.30.40") {
			t.Fatal("the portal's event page shows the operator's proxy address")
		}
		second := testid(doc, "attempt").Eq(1)
		if got := text(second.Find(`[data-testid="attempt-proxy"]`)); got != proxyHidden {
			t.Fatalf("portal proxy %q", got)
		}
		if got := text(second.Find(`[data-testid="attempt-client-cert"]`)); got != "CN=hookline,O=hookline tests" {
			t.Fatalf("portal client certificate %q", got)
		}
		_, doc = p.get(fmt.Sprintf("/portal/endpoints/%d", ep.ID))
		panel := testid(doc, "egress")
		if text(panel.Find(`[data-testid="egress-credential"]`)) != "oauth2" || text(panel.Find(`[data-testid="egress-proxy"]`)) != proxyHidden ||
			!strings.Contains(text(panel.Find(`[data-testid="egress-client-cert"]`)), "CN=hookline") ||
			!strings.Contains(text(panel.Find(`[data-testid="egress-ca"]`)), "yes") {
			t.Fatalf("portal egress panel: %s", text(panel))
		}
		if testid(doc, "edit-egress").Length() != 0 {
			t.Fatal("the portal offers the operators' form")
		}
		pages := []string{fmt.Sprintf("/portal/endpoints/%d", ep.ID), "/portal/events/" + ev.ID, "/portal/"}
		for _, path := range pages {
			_, doc := p.get(path)
			html, _ := doc.Html()
			for _, v := range append(leaks, "10.20.30.40") {
				if strings.Contains(html, v) {
					t.Fatalf("%s shows %q", path, v)
				}
			}
		}
		if res, _ := p.get(fmt.Sprintf("/endpoints/%d/egress", ep.ID)); res.StatusCode == http.StatusOK && res.Request.URL.Path != "/login" {
			t.Fatalf("a portal session reached the operators' form: %d at %s", res.StatusCode, res.Request.URL)
		}
	})
	t.Run("endpoint page", func(t *testing.T) {
		op := env.signIn(base, "ops2@example.com", "operator")
		_, doc := op.get(fmt.Sprintf("/endpoints/%d", ep.ID))
		html, _ := doc.Html()
		for _, v := range []string{"client-s3cret", "PRIVATE KEY"} {
			if strings.Contains(html, v) {
				t.Fatalf("the endpoint page shows %q", v)
			}
		}
		if got := text(testid(doc, "egress-proxy")); got != "http://10.20.30.40:3128" {
			t.Fatalf("proxy %q", got)
		}
	})
}
