package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Dashboard forms refuse what PostgreSQL would refuse with a 4xx naming
// the field, and hold settings to the API's ranges.
func TestFormTextPostgreSQLRefuses(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	admin := env.signIn(base, "admin@example.com", "admin")
	admin.get("/")
	endpointPath := fmt.Sprintf("/partners/%d/endpoints", pid)
	cases := []struct {
		name, path string
		form       url.Values
		field      string
	}{
		{"partner name", "/partners", url.Values{"name": {"a\x00b"}}, "name"},
		{"partner name not UTF-8", "/partners", url.Values{"name": {"a\xffb"}}, "name"},
		{"partner edit notes", fmt.Sprintf("/partners/%d", pid), url.Values{"name": {"Acme"}, "notes": {"\x00"}}, "notes"},
		{"endpoint name", endpointPath, endpointForm(map[string]string{"name": "k\x00"}), "name"},
		{"endpoint success_body_contains", endpointPath, endpointForm(map[string]string{"success_body_contains": "OK\x00"}), "success_body_contains"},
		{"endpoint header", endpointPath, endpointForm(map[string]string{"headers": "X-A: v\x00"}), "headers"},
		{"endpoint edit name", fmt.Sprintf("/endpoints/%d/edit", ep.ID), url.Values{"name": {"\x00"}, "url": {"https://hooks.test/h"}}, "name"},
		{"API key name", "/settings/api-keys", url.Values{"name": {"ci\x00"}}, "name"},
		{"user email", "/settings/users", url.Values{"email": {"a\x00@example.com"}, "role": {"viewer"}}, "email"},
		{"user email not UTF-8", "/settings/users", url.Values{"email": {"a\xff@example.com"}, "role": {"viewer"}}, "email"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			partners, keys, users := countRows(t, env.pool, "partners"), countRows(t, env.pool, "api_keys"), countRows(t, env.pool, "users")
			res, doc := admin.postForm(tc.path, tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422", res.StatusCode)
			}
			if !strings.Contains(doc.Text(), tc.field) {
				t.Fatalf("the answer does not name %s: %s", tc.field, strings.Join(strings.Fields(doc.Find("main").Text()), " "))
			}
			if countRows(t, env.pool, "partners") != partners || countRows(t, env.pool, "api_keys") != keys || countRows(t, env.pool, "users") != users {
				t.Fatal("refused input changed the database")
			}
		})
	}
	t.Run("query values", func(t *testing.T) {
		res, _ := admin.get("/endpoints?q=a%00b")
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 422", res.StatusCode)
		}
		res, _ = admin.get("/audit?before=%FF")
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 422", res.StatusCode)
		}
	})
	t.Run("login email", func(t *testing.T) {
		b := newBrowser(t, base)
		_, doc := b.get("/login")
		token, _ := doc.Find(`input[name=login_token]`).Attr("value")
		res, _ := b.postForm("/login", url.Values{"login_token": {token}, "email": {"admin@example.com\x00"}, "password": {"x"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 422", res.StatusCode)
		}
	})
}

func TestEndpointFormRangesAndBlockedHint(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")
	path := fmt.Sprintf("/partners/%d/endpoints", pid)
	for _, tc := range []struct {
		name  string
		over  map[string]string
		field string
	}{
		{"rate 1e-300", map[string]string{"rate_per_sec": "1e-300"}, "rate_per_sec"},
		{"port 0", map[string]string{"url": "https://hooks.test:0/pb?c={click_id}"}, "url"},
		{"port 65536", map[string]string{"url": "https://hooks.test:65536/pb?c={click_id}"}, "url"},
		{"template too long", map[string]string{"url": "https://hooks.test/pb?c={click_id}&x=" + strings.Repeat("a", maxURLLength)}, "url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := op.postForm(path, endpointForm(tc.over))
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422", res.StatusCode)
			}
			if msg := doc.Find(fmt.Sprintf(`[name=%q]`, tc.field)).Closest(".field").Find(".field-error").Text(); strings.TrimSpace(msg) == "" {
				t.Fatalf("no error next to %s", tc.field)
			}
		})
	}
	t.Run("a blocked destination names HOOKLINE_ALLOW_NETWORKS", func(t *testing.T) {
		res, doc := op.postForm(path, endpointForm(map[string]string{"url": "http://127.0.0.1:9/pb?c={click_id}"}))
		msg := doc.Find(`[name="url"]`).Closest(".field").Find(".field-error").Text()
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "HOOKLINE_ALLOW_NETWORKS") || !strings.Contains(msg, "127.0.0.0/8") {
			t.Fatalf("status %d, url error %q", res.StatusCode, msg)
		}
		_, doc = op.htmx(http.MethodPost, "/endpoints/test-fire", endpointForm(map[string]string{"url": "http://127.0.0.1:9/pb?c={click_id}"}))
		if text := doc.Text(); !strings.Contains(text, "HOOKLINE_ALLOW_NETWORKS") {
			t.Fatalf("test fire verdict does not name HOOKLINE_ALLOW_NETWORKS: %s", strings.Join(strings.Fields(text), " "))
		}
	})
}

func TestRotateFormOverlapOverflow(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	op := env.signIn(base, "op@example.com", "operator")
	op.get(fmt.Sprintf("/endpoints/%d", ep.ID))
	for _, v := range []string{"4611686018427387904", "9223372036854775807", "-1", "2592001", "12abc"} {
		res, _ := op.htmx(http.MethodPost, fmt.Sprintf("/endpoints/%d/rotate", ep.ID), url.Values{"overlap": {v}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("overlap %s: status %d, want 422", v, res.StatusCode)
		}
	}
	var unexpired int
	if err := env.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > now())", ep.ID).Scan(&unexpired); err != nil {
		t.Fatal(err)
	}
	if unexpired != 1 {
		t.Fatalf("%d usable secrets after refused rotations, want the original 1", unexpired)
	}
}

// The test fire of a saved endpoint whose destination the guard refuses at
// dial time says how to allow it.
func TestTestFireBlockedNamesAllowNetworks(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	// As if saved under an allow list since removed.
	if _, err := env.pool.Exec(context.Background(), "UPDATE endpoints SET url = 'http://127.0.0.1:9/h' WHERE id = $1", ep.ID); err != nil {
		t.Fatal(err)
	}
	op := env.signIn(base, "op@example.com", "operator")
	op.get(fmt.Sprintf("/endpoints/%d", ep.ID))
	res, doc := op.htmx(http.MethodPost, fmt.Sprintf("/endpoints/%d/test", ep.ID), url.Values{})
	text := strings.Join(strings.Fields(doc.Text()), " ")
	if res.StatusCode != http.StatusOK || !strings.Contains(text, "HOOKLINE_ALLOW_NETWORKS") || !strings.Contains(text, "127.0.0.0/8") {
		t.Fatalf("status %d: %s", res.StatusCode, text)
	}
}
