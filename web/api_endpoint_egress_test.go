package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestAPIEndpointEgress: POST and PATCH /api/v1/endpoints take an egress
// object; a client certificate is checked against its key and shown as
// subject and expiry, never the key; credentials are sealed and shown by
// type; "********" keeps a stored secret; bad input is a 422 naming the
// field.
func TestAPIEndpointEgress(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Secure Partner")
	ca := sendertest.NewCA(t, "partner client root")
	cert := ca.Issue(t, sendertest.Leaf{CommonName: "hookline", Client: true})
	other := ca.Issue(t, sendertest.Leaf{CommonName: "other", Client: true})
	egress := map[string]any{
		"proxy": "direct", "ca_bundle": string(ca.PEM),
		"client_cert": string(cert.CertPEM), "client_key": string(cert.KeyPEM),
		"auth": map[string]any{"type": "oauth2", "client_id": "hookline", "client_secret": "s3cret-value",
			"token_url": "https://auth.partner.invalid/token", "scopes": []string{"postbacks"}, "audience": "receiver"},
	}
	rec := env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{
		"partner_id": pid, "name": "mtls", "kind": "webhook", "url": "https://hooks.partner.invalid/in", "egress": egress,
	})
	mustStatus(t, rec, http.StatusCreated)
	body := rec.Body.String()
	for _, secret := range []string{"s3cret-value", "PRIVATE KEY"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the response shows %q", secret)
		}
	}
	v := decodeBody[savedEndpoint](t, rec)
	if v.Egress == nil || v.Egress.ClientCertSubject != "CN=hookline,O=hookline tests" || v.Egress.AuthType != "oauth2" ||
		!v.Egress.CustomCA || v.Egress.Proxy != "direct" || v.Egress.ClientCertExpires == nil {
		t.Fatalf("egress %+v", v.Egress)
	}
	row, err := env.srv.q.EndpointEgressGet(context.Background(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.ClientKey), "PRIVATE") || strings.Contains(string(row.AuthSecret), "s3cret") {
		t.Fatal("secrets stored in the clear")
	}
	if key, err := env.srv.box.OpenEgress(v.ID, secretbox.EgressClientKey, row.ClientKey); err != nil || string(key) != string(cert.KeyPEM) {
		t.Fatalf("the sealed key does not open: %v", err)
	}

	t.Run("masked secrets are kept", func(t *testing.T) {
		kept := map[string]any{
			"client_cert": string(cert.CertPEM), "client_key": "********",
			"auth": map[string]any{"type": "oauth2", "client_id": "hookline", "client_secret": "********", "token_url": "https://auth.partner.invalid/token"},
		}
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", v.ID), map[string]any{"egress": kept})
		mustStatus(t, rec, http.StatusOK)
		after, _ := env.srv.q.EndpointEgressGet(context.Background(), v.ID)
		if string(after.ClientKey) != string(row.ClientKey) || string(after.AuthSecret) != string(row.AuthSecret) {
			t.Fatal("a masked secret was not kept")
		}
		if after.Proxy != "" || after.CaBundle != "" {
			t.Fatal("the settings were not replaced whole")
		}
	})
	t.Run("a PATCH without egress leaves it", func(t *testing.T) {
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", v.ID), map[string]any{"name": "renamed"})
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[savedEndpoint](t, rec); got.Egress == nil || got.Egress.AuthType != "oauth2" {
			t.Fatalf("egress %+v", got.Egress)
		}
	})
	for _, tc := range []struct {
		name, field string
		egress      map[string]any
	}{
		{"key of another certificate", "egress.client_key", map[string]any{"client_cert": string(cert.CertPEM), "client_key": string(other.KeyPEM)}},
		{"certificate without key", "egress.client_key", map[string]any{"client_cert": string(other.CertPEM)}},
		{"key as CA", "egress.ca_bundle", map[string]any{"ca_bundle": string(cert.KeyPEM)}},
		{"https proxy", "egress.proxy", map[string]any{"proxy": "https://proxy.invalid:3128"}},
		{"proxy with credentials", "egress.proxy", map[string]any{"proxy": "http://u:p@proxy.invalid:3128"}},
		{"basic without password", "egress.auth.password", map[string]any{"auth": map[string]any{"type": "basic", "username": "u"}}},
		{"unknown auth", "egress.auth.type", map[string]any{"auth": map[string]any{"type": "digest"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", v.ID), map[string]any{"egress": tc.egress})
			if rec.Code != http.StatusUnprocessableEntity && rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.field) {
				t.Fatalf("%d %s, want a 4xx naming %s", rec.Code, rec.Body.String(), tc.field)
			}
		})
	}
}
