package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestAPIKeySettingsScopes: the settings form creates a key with a scope
// and a partner, the list shows both, the key can do what its scope says
// and no more, and the audit rows of create and revoke name the scope.
func TestAPIKeySettingsScopes(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	partner := env.createPartner("Acme")
	base := env.server()
	admin := env.signIn(base, "admin@example.com", "admin")

	_, doc := admin.get("/settings/api-keys")
	if v, _ := doc.Find(`select[name=scope] option[selected]`).Attr("value"); v != "admin" {
		t.Fatalf("preselected scope %q, want admin", v)
	}
	if doc.Find(fmt.Sprintf(`select[name=partner] option[value="%d"]`, partner)).Length() != 1 {
		t.Fatal("the partner select lacks the partner")
	}

	res, doc := admin.postForm("/settings/api-keys", url.Values{"name": {"checkout"}, "scope": {"ingest"}, "partner": {fmt.Sprint(partner)}})
	if res.StatusCode != http.StatusOK || res.Request.Method != http.MethodGet {
		t.Fatalf("create key: %d", res.StatusCode)
	}
	key, _ := doc.Find(`[data-testid=new-api-key] input`).Attr("value")
	if key == "" {
		key = strings.TrimSpace(testid(doc, "new-api-key").Find("code").Text())
	}
	if !strings.HasPrefix(key, "hk_") {
		t.Fatalf("new key %q", key)
	}
	var row *goquery.Selection
	doc.Find(`[data-testid=api-key-row]`).Each(func(_ int, s *goquery.Selection) {
		if p, _ := s.Attr("data-prefix"); strings.HasPrefix(key, p) {
			row = s
		}
	})
	if row == nil {
		t.Fatal("the new key is not listed")
	}
	if got := strings.TrimSpace(row.Find(`[data-testid=api-key-scope]`).Text()); got != "ingest" {
		t.Fatalf("listed scope %q", got)
	}
	if got := strings.TrimSpace(row.Find(`[data-testid=api-key-partner]`).Text()); got != "Acme" {
		t.Fatalf("listed partner %q", got)
	}

	api := &testEnv{t: t, srv: env.srv, pool: env.pool, key: key}
	mustStatus(t, api.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "t", "payload": map[string]any{}}), http.StatusAccepted)
	mustError(t, api.do(http.MethodGet, "/api/v1/partners", nil), http.StatusForbidden, "")

	auditDetails := func(action string) map[string]any {
		t.Helper()
		var raw []byte
		if err := env.pool.QueryRow(t.Context(), "SELECT details FROM audit_log WHERE action = $1 ORDER BY id DESC LIMIT 1", action).Scan(&raw); err != nil {
			t.Fatalf("%s audit row: %v", action, err)
		}
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), key) {
			t.Fatalf("%s audit row holds the key", action)
		}
		return d
	}
	if d := auditDetails("api_key.create"); d["scope"] != "ingest" || d["partner_id"] != float64(partner) || d["name"] != "checkout" {
		t.Fatalf("create audited as %v", d)
	}
	revokeURL, _ := row.Find("form").Attr("action")
	admin.postForm(revokeURL, url.Values{})
	if d := auditDetails("api_key.revoke"); d["scope"] != "ingest" {
		t.Fatalf("revoke audited as %v", d)
	}

	t.Run("no scope sent is admin", func(t *testing.T) {
		admin.postForm("/settings/api-keys", url.Values{"name": {"ops"}})
		if d := auditDetails("api_key.create"); d["scope"] != "admin" || d["name"] != "ops" {
			t.Fatalf("create audited as %v", d)
		}
	})
	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
	}{
		{"unknown scope", url.Values{"name": {"x"}, "scope": {"root"}}, "scope"},
		{"admin bound to a partner", url.Values{"name": {"x"}, "scope": {"admin"}, "partner": {fmt.Sprint(partner)}}, "partner"},
		{"partner not a number", url.Values{"name": {"x"}, "scope": {"read"}, "partner": {"acme"}}, "partner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := countRows(t, env.pool, "api_keys")
			res, doc := admin.postForm("/settings/api-keys", tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d", res.StatusCode)
			}
			if doc.Find(`#key-`+tc.field).Length() != 1 || doc.Find(`[data-testid=field-error]`).Length() != 1 {
				t.Fatalf("no error on %s", tc.field)
			}
			if countRows(t, env.pool, "api_keys") != keys {
				t.Fatal("a key was created")
			}
		})
	}
}
