package worker

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// attemptEgress is how one recorded attempt left.
type attemptEgress struct {
	proxy, tls, subject, credential *string
	resumed                         *bool
}

func (e *env) attemptsEgress(endpointID int64) []attemptEgress {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT egress_proxy, tls_version, tls_resumed, client_cert_subject, credential
		FROM delivery_attempts WHERE endpoint_id = $1 ORDER BY started_at, id`, endpointID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []attemptEgress
	for rows.Next() {
		var a attemptEgress
		if err := rows.Scan(&a.proxy, &a.tls, &a.resumed, &a.subject, &a.credential); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// TestAttemptRecordsEgress: every attempt records how it left. An endpoint
// with a client certificate, a private CA and basic credentials, direct
// although the worker has a default proxy, delivers to a receiver that
// requires the certificate and closes each connection: both attempts say
// TLS 1.3, direct, the certificate's subject and "basic", and the second,
// on a fresh connection, resumed the first one's session. An endpoint
// without settings beside it goes through the default proxy (a real
// tinyproxy) over plain HTTP: its attempt names the proxy and no TLS,
// certificate or credential. An attempt the guard refused left no way.
func TestAttemptRecordsEgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	proxy, err := sender.ParseProxy("http://" + sendertest.Tinyproxy(t))
	if err != nil {
		t.Fatal(err)
	}
	ca := sendertest.NewCA(t, "partner root")
	clientCA := sendertest.NewCA(t, "partner client root")
	rcv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if user, _, ok := r.BasicAuth(); !ok || user != "partner" || len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		// A fresh connection for the next attempt: its handshake resumes.
		w.Header().Set("Connection", "close")
	}), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = clientCA.Pool()
	})
	id, _ := e.endpoint(endpointOpts{url: rcv.URL + "/hook"})
	cert := clientCA.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true})
	key, _ := e.box.SealEgress(id, secretbox.EgressClientKey, cert.KeyPEM)
	password, _ := e.box.SealEgress(id, secretbox.EgressAuthSecret, []byte("pw"))
	if _, err := e.q.EndpointEgressSet(ctx, db.EndpointEgressSetParams{
		EndpointID: id, Proxy: egress.ProxyDirect, CaBundle: string(ca.PEM), ClientCert: string(cert.CertPEM), ClientKey: key,
		ClientCertSubject: "CN=hookline,O=hookline tests", AuthKind: egress.AuthBasic, AuthUsername: "partner", AuthSecret: password,
		OauthScopes: []string{},
	}); err != nil {
		t.Fatal(err)
	}
	plain := newReceiver(t)
	plainID, _ := e.endpoint(endpointOpts{url: plain.URL + "/hook"})
	blocked, _ := e.endpoint(endpointOpts{url: "http://169.254.169.254/hook", maxAttempts: 1})

	w := e.worker(func(c *Config) { c.EgressProxy = proxy })
	e.run(w)
	for n := 1; n <= 2; n++ {
		// One at a time, so that the second finds the first's session.
		e.events(1, "order.created", `{"n":1}`)
		e.waitFor("delivered", func() bool {
			return e.count("SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1 AND outcome = 'ok'", id) == n &&
				e.count("SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1", plainID) == n &&
				e.count("SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1", blocked) == n
		})
	}

	got := e.attemptsEgress(id)
	if len(got) != 2 {
		t.Fatalf("%d attempts", len(got))
	}
	for i, a := range got {
		if str(a.proxy) != "direct" || str(a.tls) != "TLS 1.3" || str(a.subject) != "CN=hookline,O=hookline tests" || str(a.credential) != "basic" {
			t.Fatalf("attempt %d left by proxy %s, %s, certificate %s, credential %s", i+1, str(a.proxy), str(a.tls), str(a.subject), str(a.credential))
		}
		if a.resumed == nil || *a.resumed != (i == 1) {
			t.Fatalf("attempt %d: resumed %v, want %v", i+1, a.resumed, i == 1)
		}
	}
	for _, a := range e.attemptsEgress(plainID) {
		if str(a.proxy) != "http://"+proxy.Host || a.tls != nil || a.resumed != nil || a.subject != nil || a.credential != nil {
			t.Fatalf("plain attempt through the default proxy recorded %s, %s, %v, %s, %s", str(a.proxy), str(a.tls), a.resumed, str(a.subject), str(a.credential))
		}
	}
	for _, a := range e.attemptsEgress(blocked) {
		if a.proxy != nil || a.tls != nil {
			t.Fatalf("a refused attempt recorded proxy %s, %s", str(a.proxy), str(a.tls))
		}
	}
	if strings.Contains(e.deliveryStates(), "pending") {
		t.Fatalf("undelivered: %s", e.deliveryStates())
	}
}
