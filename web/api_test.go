package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	t.Run("missing key", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/partners", nil, "Authorization", "")
		mustError(t, rec, http.StatusUnauthorized, "")
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatal("401 without WWW-Authenticate")
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/partners", nil, "Authorization", "Bearer hk_not-a-key")
		mustError(t, rec, http.StatusUnauthorized, "")
	})
	t.Run("wrong scheme", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/partners", nil, "Authorization", "Basic "+env.key)
		mustError(t, rec, http.StatusUnauthorized, "")
	})
	t.Run("revoked key", func(t *testing.T) {
		if _, err := env.pool.Exec(context.Background(), "UPDATE api_keys SET revoked_at = now()"); err != nil {
			t.Fatal(err)
		}
		mustError(t, env.do(http.MethodGet, "/api/v1/partners", nil), http.StatusUnauthorized, "")
	})
}

func TestAPIPartners(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var id int64
	t.Run("create", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": " Acme Tracker ", "contact": "ops@acme.example"})
		mustStatus(t, rec, http.StatusCreated)
		p := decodeBody[partnerJSON](t, rec)
		if p.Name != "Acme Tracker" || p.ID == 0 {
			t.Fatalf("created %+v", p)
		}
		id = p.ID
	})
	t.Run("duplicate name is 409", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": "acme tracker"}), http.StatusConflict, "name")
	})
	t.Run("missing name is 422", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"contact": "x"}), http.StatusUnprocessableEntity, "name")
	})
	t.Run("unknown field is 422", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": "B", "nmae": "x"}), http.StatusUnprocessableEntity, "nmae")
	})
	t.Run("wrong type is 422", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": 12}), http.StatusUnprocessableEntity, "name")
	})
	t.Run("malformed JSON is 400", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", `{"name": "x"`), http.StatusBadRequest, "")
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", `{"name": }`), http.StatusBadRequest, "")
		mustError(t, env.do(http.MethodPost, "/api/v1/partners", ``), http.StatusBadRequest, "")
	})
	t.Run("get and list", func(t *testing.T) {
		rec := env.do(http.MethodGet, fmt.Sprintf("/api/v1/partners/%d", id), nil)
		mustStatus(t, rec, http.StatusOK)
		rec = env.do(http.MethodGet, "/api/v1/partners", nil)
		mustStatus(t, rec, http.StatusOK)
		list := decodeBody[struct{ Partners []partnerJSON }](t, rec)
		if len(list.Partners) != 1 || *list.Partners[0].EndpointCount != 0 {
			t.Fatalf("list = %+v", list)
		}
	})
	t.Run("unknown id is 404", func(t *testing.T) {
		mustError(t, env.do(http.MethodGet, "/api/v1/partners/999999", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodGet, "/api/v1/partners/abc", nil), http.StatusNotFound, "")
	})
	t.Run("audited", func(t *testing.T) {
		var n int
		if err := env.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE action = 'partner.create' AND actor LIKE 'api_key:hk_%'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("audit rows = %d, %v", n, err)
		}
	})
}

func TestAPIEndpoints(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	var webhookID int64
	t.Run("create webhook returns the secret once", func(t *testing.T) {
		e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://hooks.acme.example/in"})
		if !strings.HasPrefix(e.Secret, "whsec_") || e.Method != "POST" || e.MaxAttempts != 5 || e.TimeoutMs != 15000 ||
			e.MaxInFlight != 8 || e.FailureThreshold != 10 || !e.Enabled || e.Health == nil || e.Health.State != "closed" {
			t.Fatalf("created %+v", e)
		}
		webhookID = e.ID
		var sealed []byte
		if err := env.pool.QueryRow(context.Background(), "SELECT ciphertext FROM endpoint_secrets WHERE endpoint_id = $1", e.ID).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(sealed, []byte(e.Secret)) || bytes.Contains(sealed, []byte(strings.TrimPrefix(e.Secret, "whsec_"))) {
			t.Fatal("secret stored in clear")
		}
		rec := env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), nil)
		mustStatus(t, rec, http.StatusOK)
		if strings.Contains(rec.Body.String(), "whsec_") {
			t.Fatal("GET shows the secret")
		}
	})
	t.Run("create postback", func(t *testing.T) {
		e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "keitaro", "kind": "postback",
			"url": "https://tracker.example/postback?subid={click_id}&status={status}&payout={payout}", "event_types": []string{"conversion.approved"},
			"rate_per_sec": 5, "success_body_contains": "OK"})
		if e.Method != "GET" || *e.RatePerSec != 5 || *e.Burst != 5 {
			t.Fatalf("created %+v", e)
		}
	})
	invalid := []struct {
		name   string
		fields map[string]any
		field  string
	}{
		{"missing partner", map[string]any{"name": "a", "kind": "webhook", "url": "https://a.example/"}, "partner_id"},
		{"unknown partner", map[string]any{"partner_id": 99999, "name": "a", "kind": "webhook", "url": "https://a.example/"}, "partner_id"},
		{"missing name", map[string]any{"partner_id": pid, "kind": "webhook", "url": "https://a.example/"}, "name"},
		{"bad kind", map[string]any{"partner_id": pid, "name": "a", "kind": "email", "url": "https://a.example/"}, "kind"},
		{"not a URL", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "hooks dot example"}, "url"},
		{"ftp scheme", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "ftp://a.example/"}, "url"},
		{"loopback literal", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "http://127.0.0.1:9000/"}, "url"},
		{"private literal", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "http://10.1.2.3/"}, "url"},
		{"metadata address", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "http://169.254.169.254/latest"}, "url"},
		{"localhost name", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "http://localhost/"}, "url"},
		{"webhook GET", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "method": "GET", "url": "https://a.example/"}, "method"},
		{"unbalanced macro", map[string]any{"partner_id": pid, "name": "a", "kind": "postback", "url": "https://t.example/pb?cid={click_id"}, "url"},
		{"macro in host", map[string]any{"partner_id": pid, "name": "a", "kind": "postback", "url": "https://{host}/pb"}, "url"},
		{"reserved header", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "headers": map[string]string{"Webhook-Signature": "x"}}, "headers"},
		{"bad header name", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "headers": map[string]string{"Bad Header": "x"}}, "headers"},
		{"max_attempts range", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "max_attempts": 0}, "max_attempts"},
		{"timeout range", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "timeout_ms": 5}, "timeout_ms"},
		{"negative rate", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "rate_per_sec": -1}, "rate_per_sec"},
		{"burst without rate", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "burst": 3}, "burst"},
		{"bad event type", map[string]any{"partner_id": pid, "name": "a", "kind": "webhook", "url": "https://a.example/", "event_types": []string{"has space"}}, "event_types"},
	}
	for _, tc := range invalid {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			before := countRows(t, env.pool, "endpoints")
			mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", tc.fields), http.StatusUnprocessableEntity, tc.field)
			if after := countRows(t, env.pool, "endpoints"); after != before {
				t.Fatalf("rejected input changed endpoints: %d → %d", before, after)
			}
		})
	}
	t.Run("duplicate name is 409", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://b.example/"}), http.StatusConflict, "name")
	})
	t.Run("patch disables and keeps other fields", func(t *testing.T) {
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", webhookID), map[string]any{"enabled": false, "max_attempts": 8})
		mustStatus(t, rec, http.StatusOK)
		e := decodeBody[endpointJSON](t, rec)
		if e.Enabled || e.MaxAttempts != 8 || e.URL != "https://hooks.acme.example/in" || e.DisabledReason == "" {
			t.Fatalf("patched %+v", e)
		}
		rec = env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", webhookID), map[string]any{"enabled": true})
		if e := decodeBody[endpointJSON](t, rec); !e.Enabled || e.DisabledReason != "" {
			t.Fatalf("re-enabled %+v", e)
		}
	})
	t.Run("patch rejects immutable and invalid fields", func(t *testing.T) {
		path := fmt.Sprintf("/api/v1/endpoints/%d", webhookID)
		mustError(t, env.do(http.MethodPatch, path, map[string]any{"kind": "postback"}), http.StatusUnprocessableEntity, "kind")
		mustError(t, env.do(http.MethodPatch, path, map[string]any{"partner_id": pid + 1}), http.StatusUnprocessableEntity, "partner_id")
		mustError(t, env.do(http.MethodPatch, path, map[string]any{"url": "http://192.168.1.1/"}), http.StatusUnprocessableEntity, "url")
		rec := env.do(http.MethodGet, path, nil)
		if e := decodeBody[endpointJSON](t, rec); e.URL != "https://hooks.acme.example/in" {
			t.Fatalf("rejected PATCH changed the URL: %s", e.URL)
		}
		mustError(t, env.do(http.MethodPatch, "/api/v1/endpoints/424242", map[string]any{"enabled": true}), http.StatusNotFound, "")
	})
	t.Run("list with health", func(t *testing.T) {
		rec := env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints?partner_id=%d", pid), nil)
		mustStatus(t, rec, http.StatusOK)
		list := decodeBody[struct{ Endpoints []endpointJSON }](t, rec)
		if len(list.Endpoints) != 2 || list.Endpoints[0].Health == nil || list.Endpoints[0].PartnerName != "Acme" {
			t.Fatalf("list = %+v", list)
		}
	})
}

func countRows(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
