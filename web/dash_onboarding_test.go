package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func endpointForm(over map[string]string) url.Values {
	v := url.Values{"kind": {"postback"}, "name": {"keitaro"}, "url": {"https://tracker.acme.example/postback?subid={click_id}&status={status}&payout={payout}"},
		"method": {"GET"}, "max_attempts": {"5"}, "timeout_ms": {"15000"}, "max_in_flight": {"8"}, "failure_threshold": {"10"}}
	for k, val := range over {
		if val == "<delete>" {
			v.Del(k)
			continue
		}
		v.Set(k, val)
	}
	return v
}

func TestEndpointFormRules(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")
	path := fmt.Sprintf("/partners/%d/endpoints", pid)
	rules := []struct {
		name  string
		over  map[string]string
		field string
	}{
		{"name required", map[string]string{"name": ""}, "name"},
		{"url required", map[string]string{"url": ""}, "url"},
		{"unbalanced braces", map[string]string{"url": "https://t.example/pb?cid={click_id"}, "url"},
		{"bad macro name", map[string]string{"url": "https://t.example/pb?cid={click id}"}, "url"},
		{"unknown scheme", map[string]string{"url": "ftp://t.example/pb?cid={click_id}"}, "url"},
		{"loopback literal", map[string]string{"url": "http://127.0.0.1/pb?cid={click_id}"}, "url"},
		{"private literal", map[string]string{"url": "http://192.168.1.10/pb?cid={click_id}"}, "url"},
		{"preset host not replaced", map[string]string{"url": "https://YOUR-DOMAIN.example/postback?subid={click_id}"}, "url"},
		{"preset key not replaced", map[string]string{"url": "https://tracker.acme.example/POSTBACK-KEY/postback?subid={click_id}"}, "url"},
		{"method", map[string]string{"method": "DELETE"}, "method"},
		{"header name", map[string]string{"headers": "Bad Header: x"}, "headers"},
		{"header line", map[string]string{"headers": "no colon here"}, "headers"},
		{"reserved header", map[string]string{"headers": "webhook-id: x"}, "headers"},
		{"attempts range", map[string]string{"max_attempts": "0"}, "max_attempts"},
		{"attempts number", map[string]string{"max_attempts": "five"}, "max_attempts"},
		{"timeout range", map[string]string{"timeout_ms": "999999"}, "timeout_ms"},
		{"rate range", map[string]string{"rate_per_sec": "-2"}, "rate_per_sec"},
		{"burst without rate", map[string]string{"burst": "4"}, "burst"},
		{"in flight range", map[string]string{"max_in_flight": "0"}, "max_in_flight"},
		{"threshold range", map[string]string{"failure_threshold": "5000"}, "failure_threshold"},
		{"event type", map[string]string{"event_types": "bad type!"}, "event_types"},
		{"webhook URL scheme", map[string]string{"kind": "webhook", "url": "gopher://h.example/in"}, "url"},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			before := countRows(t, env.pool, "endpoints")
			for _, htmx := range []bool{false, true} {
				var res *http.Response
				var doc *goquery.Document
				if htmx {
					res, doc = op.htmx(http.MethodPost, path, endpointForm(r.over))
				} else {
					res, doc = op.postForm(path, endpointForm(r.over))
				}
				if res.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("htmx=%v: status %d", htmx, res.StatusCode)
				}
				errEl := doc.Find(fmt.Sprintf(`[name=%q]`, r.field)).Closest(".field").Find(".field-error")
				if strings.TrimSpace(errEl.Text()) == "" {
					t.Fatalf("htmx=%v: no error next to %s; form errors: %s", htmx, r.field, testid(doc, "form-errors").Text())
				}
				if htmx && doc.Find("html").Length() != 0 && doc.Find("header.topbar").Length() != 0 {
					t.Fatal("htmx got a whole page instead of the form")
				}
			}
			if after := countRows(t, env.pool, "endpoints"); after != before {
				t.Fatalf("invalid input changed the database: %d → %d endpoints", before, after)
			}
		})
	}
}

func TestOnboardKeitaroPostback(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	base := env.server()
	var hits []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.URL.RawQuery)
		io.WriteString(w, "OK")
	}))
	defer rcv.Close()
	op := env.signIn(base, "op@example.com", "operator")

	res, _ := op.postForm("/partners", url.Values{"name": {""}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("empty partner name: %d", res.StatusCode)
	}
	res, doc := op.postForm("/partners", url.Values{"name": {"Clickwave"}, "contact": {"ops@clickwave.example"}})
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Request.URL.Path, "/partners/") {
		t.Fatalf("create partner: %d %s", res.StatusCode, res.Request.URL)
	}
	newPostback, _ := testid(doc, "add-postback").Attr("href")

	_, doc = op.get(newPostback + "&preset=keitaro")
	tmpl, _ := doc.Find(`[name=url]`).Attr("value")
	if !strings.Contains(tmpl, "subid={click_id}") || testid(doc, "preset-help").Length() != 1 {
		t.Fatalf("keitaro preset not applied: %q", tmpl)
	}
	if !strings.Contains(testid(doc, "preview-url").Text(), "abc%20123%26x%3D1") {
		t.Fatalf("preview: %q", testid(doc, "preview-url").Text())
	}
	mine := strings.Replace(tmpl, "https://YOUR-DOMAIN.example/POSTBACK-KEY", rcv.URL+"/k3y", 1)
	_, prev := op.htmx(http.MethodPost, "/endpoints/preview", url.Values{"url": {mine + "&x={clik_id}"}})
	if m := prev.Find(`mark.macro-unknown[data-macro="clik_id"]`); m.Length() != 1 {
		t.Fatalf("misspelt macro not highlighted: %s", prev.Text())
	}
	action, _ := testid(doc, "endpoint-form").Attr("action")
	form := endpointForm(map[string]string{"url": tmpl, "preset": "keitaro", "success_body_contains": "OK"})
	res, doc = op.postForm(action, form)
	if res.StatusCode != http.StatusUnprocessableEntity || countRows(t, env.pool, "endpoints") != 0 {
		t.Fatal("the preset's placeholder host was accepted")
	}
	form.Set("url", mine)
	_, fire := op.htmx(http.MethodPost, "/endpoints/test-fire", form)
	if !strings.Contains(testid(fire, "test-result-view").Text(), "200") || len(hits) != 1 || !strings.Contains(hits[0], "subid=abc%20123%26x%3D1") {
		t.Fatalf("test fire: %s; hits %v", fire.Text(), hits)
	}
	res, doc = op.postForm(action, form)
	if res.StatusCode != http.StatusCreated || testid(doc, "endpoint-created").Length() != 1 {
		t.Fatalf("create: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	if !strings.Contains(testid(doc, "endpoint-created").Text(), "whsec_") && doc.Find(`input[value^="whsec_"]`).Length() == 0 {
		t.Fatal("the secret is not shown")
	}
	health, _ := testid(doc, "created-health-link").Attr("href")
	_, doc = op.get(health)
	if strings.Contains(doc.Text(), "whsec_") || testid(doc, "endpoint-config").Length() != 1 {
		t.Fatal("the endpoint page shows the secret again, or no config")
	}
}

func TestAPIKeysAndUsersSettings(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	admin := env.signIn(base, "admin@example.com", "admin")
	res, doc := admin.postForm("/settings/api-keys", url.Values{"name": {"checkout"}})
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
	api := &testEnv{t: t, srv: env.srv, pool: env.pool, key: key}
	mustStatus(t, api.do(http.MethodGet, "/api/v1/partners", nil), http.StatusOK)
	_, doc = admin.get("/settings/api-keys")
	if strings.Contains(doc.Text(), key) {
		t.Fatal("the key is shown again")
	}
	var revokeURL string
	doc.Find(`[data-testid=api-key-row]`).Each(func(_ int, s *goquery.Selection) {
		if p, _ := s.Attr("data-prefix"); strings.HasPrefix(key, p) {
			revokeURL, _ = s.Find("form").Attr("action")
		}
	})
	admin.postForm(revokeURL, url.Values{})
	mustError(t, api.do(http.MethodGet, "/api/v1/partners", nil), http.StatusUnauthorized, "")

	res, _ = admin.postForm("/settings/api-keys", url.Values{"name": {""}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("nameless key: %d", res.StatusCode)
	}
	t.Run("users", func(t *testing.T) {
		res, doc := admin.postForm("/settings/users", url.Values{"email": {"new@example.com"}, "role": {"viewer"}})
		if res.StatusCode != http.StatusOK || testid(doc, "new-user-password").Length() != 1 {
			t.Fatalf("add user: %d", res.StatusCode)
		}
		res, _ = admin.postForm("/settings/users", url.Values{"email": {"not-an-email"}, "role": {"viewer"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("bad email: %d", res.StatusCode)
		}
		var adminID int64
		if err := env.pool.QueryRow(t.Context(), "SELECT id FROM users WHERE email = 'admin@example.com'").Scan(&adminID); err != nil {
			t.Fatal(err)
		}
		res, doc = admin.postForm(fmt.Sprintf("/settings/users/%d/role", adminID), url.Values{"role": {"viewer"}})
		if res.StatusCode != http.StatusConflict || !strings.Contains(testid(doc, "user-error").Text(), "last active admin") {
			t.Fatalf("demoting the last admin: %d", res.StatusCode)
		}
		res, _ = admin.postForm(fmt.Sprintf("/settings/users/%d/disable", adminID), url.Values{"disabled": {"true"}})
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("disabling the last admin: %d", res.StatusCode)
		}
	})
}

func TestPartnerAndUserFormRules(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	admin := env.signIn(base, "admin@example.com", "admin")
	env.createPartner("Taken")
	cases := []struct {
		name, path, table, field string
		form                     url.Values
	}{
		{"partner name required", "/partners", "partners", "name", url.Values{"name": {"  "}}},
		{"partner name too long", "/partners", "partners", "name", url.Values{"name": {strings.Repeat("x", 201)}}},
		{"partner name taken", "/partners", "partners", "name", url.Values{"name": {"taken"}}},
		{"partner contact too long", "/partners", "partners", "contact", url.Values{"name": {"New"}, "contact": {strings.Repeat("x", 501)}}},
		{"user email invalid", "/settings/users", "users", "email", url.Values{"email": {"nope"}, "role": {"viewer"}}},
		{"user email taken", "/settings/users", "users", "email", url.Values{"email": {"ADMIN@example.com"}, "role": {"viewer"}}},
		{"user role unknown", "/settings/users", "users", "role", url.Values{"email": {"x@example.com"}, "role": {"root"}}},
		{"user password short", "/settings/users", "users", "password", url.Values{"email": {"y@example.com"}, "role": {"viewer"}, "password": {"short"}}},
		{"api key name required", "/settings/api-keys", "api_keys", "name", url.Values{"name": {""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := countRows(t, env.pool, tc.table)
			res, doc := admin.postForm(tc.path, tc.form)
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d", res.StatusCode)
			}
			if msg := strings.TrimSpace(doc.Find(fmt.Sprintf(`[name=%q]`, tc.field)).Closest(".field").Find(".field-error").Text()); msg == "" {
				t.Fatalf("no error next to %s", tc.field)
			}
			if after := countRows(t, env.pool, tc.table); after != before {
				t.Fatalf("%s changed: %d → %d", tc.table, before, after)
			}
		})
	}
}
