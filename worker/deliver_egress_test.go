package worker

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestDeliverEgress: an endpoint with a client certificate, a private CA
// and OAuth2 client credentials, through the default egress proxy (a real
// tinyproxy), receives a burst of deliveries over HTTPS with one token
// fetched for all of them; changing its settings moves egress_rev and the
// worker sends with the new ones; an endpoint without egress settings
// beside it goes through the shared client, also through the proxy.
func TestDeliverEgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	proxy, err := sender.ParseProxy("http://" + sendertest.Tinyproxy(t))
	if err != nil {
		t.Fatal(err)
	}
	ca := sendertest.NewCA(t, "partner root")
	clientCA := sendertest.NewCA(t, "partner client root")
	var tokens atomic.Int64
	tokenSrv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if id != "hookline" || secret != "client-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		tokens.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "tok", "token_type": "Bearer", "expires_in": 3600})
	}), nil)
	var got, bearer, basic atomic.Int64
	rcv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "hookline" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		switch a := r.Header.Get("Authorization"); {
		case a == "Bearer tok":
			bearer.Add(1)
		case strings.HasPrefix(a, "Basic "):
			basic.Add(1)
		}
		got.Add(1)
	}), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = clientCA.Pool()
	})
	id, _ := e.endpoint(endpointOpts{url: rcv.URL + "/hook"})
	cert := clientCA.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true})
	set := func(p db.EndpointEgressSetParams) {
		t.Helper()
		p.EndpointID, p.CaBundle, p.ClientCert = id, string(ca.PEM), string(cert.CertPEM)
		p.ClientKey, _ = e.box.SealEgress(id, secretbox.EgressClientKey, cert.KeyPEM)
		if p.OauthScopes == nil {
			p.OauthScopes = []string{}
		}
		if _, err := e.q.EndpointEgressSet(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	secret, _ := e.box.SealEgress(id, secretbox.EgressAuthSecret, []byte("client-secret"))
	set(db.EndpointEgressSetParams{
		AuthKind: egress.AuthOAuth2, AuthUsername: "hookline", AuthSecret: secret,
		OauthTokenUrl: tokenSrv.URL + "/token", OauthScopes: []string{"postbacks"},
	})

	e.events(40, "order.created", `{"n":1}`)
	w := e.worker(func(c *Config) { c.EgressProxy = proxy; c.RootCAs = sendertest.NewCA(t, "other").Pool() })
	stop := e.run(w)
	e.waitFor("40 delivered", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'", id) == 40
	})
	if n := tokens.Load(); n != 1 {
		t.Fatalf("%d token requests for 40 deliveries, want 1", n)
	}
	if bearer.Load() != 40 {
		t.Fatalf("%d deliveries carried the token", bearer.Load())
	}

	password, _ := e.box.SealEgress(id, secretbox.EgressAuthSecret, []byte("pw"))
	set(db.EndpointEgressSetParams{AuthKind: egress.AuthBasic, AuthUsername: "partner", AuthSecret: password})
	e.events(1, "order.created", `{"n":2}`)
	e.waitFor("sent with the new settings", func() bool { return basic.Load() == 1 })
	stop()
	if e.count("SELECT count(*) FROM deliveries WHERE status <> 'delivered'") != 0 {
		t.Fatalf("undelivered: %s", e.deliveryStates())
	}
}
