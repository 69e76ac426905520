package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestMutatingRoutesNeedSessionAndCSRF walks the route table: every
// dashboard route that changes state refuses a request without a session,
// and one with a session but without the CSRF token.
func TestMutatingRoutesNeedSessionAndCSRF(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	admin := env.signIn(base, "admin@example.com", "admin")
	anon := newBrowser(t, base)
	anon.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	checked := 0
	for _, r := range env.srv.Routes() {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || strings.HasPrefix(r.Path, "/api/") || r.Path == "/login" || r.Method == "echo_route_not_found" ||
			r.Path == "/portal/signin" { // a sign-in link's token is its credential (TestPortalLinkAPI)
			continue
		}
		path := strings.NewReplacer(":id", "1", "*", "x").Replace(r.Path)
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			req, _ := http.NewRequest(r.Method, base+path, strings.NewReader("x=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := anon.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode < 300 {
				t.Fatalf("without a session: %d", res.StatusCode)
			}
			res, _ = admin.postForm(path, url.Values{"csrf_token": {"forged"}})
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("with a forged CSRF token: %d, want 403", res.StatusCode)
			}
			req, _ = http.NewRequest(r.Method, base+path, strings.NewReader("x=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("HX-Request", "true")
			res, err = admin.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("htmx request without the token: %d, want 403", res.StatusCode)
			}
		})
		checked++
	}
	if checked < 15 {
		t.Fatalf("only %d mutating routes found", checked)
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	env.signIn(base, "ops@example.com", "operator")
	t.Run("pages need a session", func(t *testing.T) {
		b := newBrowser(t, base)
		res, doc := b.get("/endpoints?q=x")
		if res.Request.URL.Path != "/login" || res.Request.URL.Query().Get("next") != "/endpoints?q=x" || testid(doc, "login-form").Length() != 1 {
			t.Fatalf("landed on %s", res.Request.URL)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		b := newBrowser(t, base)
		_, doc := b.get("/login")
		token, _ := doc.Find(`input[name=login_token]`).Attr("value")
		res, doc := b.postForm("/login", url.Values{"login_token": {token}, "email": {"ops@example.com"}, "password": {"nope nope nope"}})
		if res.StatusCode != http.StatusUnauthorized || testid(doc, "login-error").Length() != 1 {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("login form without its token", func(t *testing.T) {
		b := newBrowser(t, base)
		res, _ := b.postForm("/login", url.Values{"email": {"ops@example.com"}, "password": {"correct horse battery"}})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("failed logins are throttled per account", func(t *testing.T) {
		b := newBrowser(t, base)
		var last int
		for range 7 {
			_, doc := b.get("/login")
			token, _ := doc.Find(`input[name=login_token]`).Attr("value")
			res, _ := b.postForm("/login", url.Values{"login_token": {token}, "email": {"ops@example.com"}, "password": {"guess guess guess"}})
			last = res.StatusCode
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("7th failed attempt: %d, want 429", last)
		}
	})
	t.Run("session id rotates at login and logout ends it", func(t *testing.T) {
		b := newBrowser(t, base)
		b.get("/login")
		u, _ := url.Parse(base)
		before := cookieValue(b, u, sessionCookie)
		env.exec("DELETE FROM users WHERE email = 'rot@example.com'")
		b2 := env.signIn(base, "rot@example.com", "viewer")
		after := cookieValue(b2, u, sessionCookie)
		if after == "" || after == before {
			t.Fatal("no fresh session cookie at login")
		}
		n := countRows(t, env.pool, "user_sessions")
		b2.postForm("/logout", nil_())
		if countRows(t, env.pool, "user_sessions") != n-1 {
			t.Fatal("logout did not end the session")
		}
		res, _ := b2.get("/")
		if res.Request.URL.Path != "/login" {
			t.Fatal("still signed in after logout")
		}
	})
	t.Run("disabled users lose their sessions", func(t *testing.T) {
		b := env.signIn(base, "gone@example.com", "viewer")
		env.exec("UPDATE users SET disabled_at = now() WHERE email = 'gone@example.com'")
		res, _ := b.get("/")
		if res.Request.URL.Path != "/login" {
			t.Fatal("a disabled user still has a session")
		}
	})
	t.Run("idle sessions expire", func(t *testing.T) {
		b := env.signIn(base, "idle@example.com", "viewer")
		env.exec("UPDATE user_sessions SET last_seen_at = now() - interval '9 hours' FROM users WHERE users.id = user_sessions.user_id AND users.email = 'idle@example.com'")
		res, _ := b.get("/")
		if res.Request.URL.Path != "/login" {
			t.Fatal("an idle session is still valid")
		}
	})
	t.Run("cookie flags", func(t *testing.T) {
		env.signIn(base, "flags@example.com", "viewer") // creates the user
		b := newBrowser(t, base)
		var set []*http.Cookie
		b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, doc := b.get("/login")
		set = append(set, res.Cookies()...)
		token, _ := doc.Find(`input[name=login_token]`).Attr("value")
		res, _ = b.postForm("/login", url.Values{"login_token": {token}, "email": {"flags@example.com"}, "password": {"correct horse battery"}})
		if res.StatusCode != http.StatusSeeOther && res.StatusCode != http.StatusFound {
			t.Fatalf("sign in: %d, want a redirect", res.StatusCode)
		}
		set = append(set, res.Cookies()...)
		if len(set) == 0 {
			t.Fatal("signing in set no cookie")
		}
		for _, c := range set {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("cookie %s: HttpOnly=%v SameSite=%v", c.Name, c.HttpOnly, c.SameSite)
			}
		}
	})
}

func nil_() url.Values { return url.Values{} }

func cookieValue(b *browser, u *url.URL, name string) string {
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func TestRoles(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	env.seedDead(ep.ID, "http_status", 500, "", time.Now().Add(-time.Minute))
	viewer := env.signIn(base, "viewer@example.com", "viewer")
	operator := env.signIn(base, "op@example.com", "operator")

	_, doc := viewer.get("/dead-letters")
	if testid(doc, "cluster-row").Length() != 1 || testid(doc, "replay-cluster").Length() != 0 {
		t.Fatal("a viewer sees replay buttons (or no cluster)")
	}
	_, doc = operator.get("/dead-letters")
	if testid(doc, "replay-cluster").Length() != 1 {
		t.Fatal("an operator has no replay button")
	}
	key, _ := doc.Find(`[data-testid=cluster-row]`).Attr("data-cluster")
	res, _ := viewer.postForm("/dead-letters/replay", url.Values{"cluster": {key}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer replay: %d", res.StatusCode)
	}
	res, _ = operator.get("/settings/users")
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("operator on /settings/users: %d", res.StatusCode)
	}
	_, doc = viewer.get(fmt.Sprintf("/endpoints/%d", ep.ID))
	if testid(doc, "breaker-controls").Length() != 0 || testid(doc, "rotate-button").Length() != 0 {
		t.Fatal("a viewer sees breaker or rotation controls")
	}
}
