package web

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/hookline/hookline/web/sso"
)

// lockedBuffer collects a server's log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// signedInAs fails unless the response is a dashboard page of the user.
func signedInAs(t *testing.T, res *http.Response, doc *goquery.Document, email, path string) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != path {
		t.Fatalf("landed on %s with %d, want %s: %s", res.Request.URL, res.StatusCode, path, testid(doc, "login-error").Text())
	}
	if got := strings.TrimSpace(doc.Find("[data-testid=user] .user-email").Text()); got != email {
		t.Fatalf("signed in as %q, want %q", got, email)
	}
}

// refusedWith fails unless the response is the login page, with the status
// and an error saying msg, and the browser has no session.
func refusedWith(t *testing.T, b *browser, res *http.Response, doc *goquery.Document, status int, msg string) {
	t.Helper()
	if res.StatusCode != status || testid(doc, "login").Length() != 1 {
		t.Fatalf("status %d at %s, want the login page with %d", res.StatusCode, res.Request.URL, status)
	}
	if got := testid(doc, "login-error").Text(); !strings.Contains(got, msg) {
		t.Fatalf("login error %q, want it to say %q", got, msg)
	}
	if res, _ := b.get("/"); res.Request.URL.Path != "/login" {
		t.Fatalf("refused, yet signed in: / is %s", res.Request.URL)
	}
}

func (e *testEnv) userRow(email string) (id int64, role string, issuer, subject *string) {
	e.t.Helper()
	err := e.pool.QueryRow(context.Background(), `SELECT id, role, oidc_issuer, oidc_subject FROM users WHERE lower(email) = lower($1)`, email).
		Scan(&id, &role, &issuer, &subject)
	if err != nil {
		e.t.Fatalf("user %s: %v", email, err)
	}
	return id, role, issuer, subject
}

func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	p := newOIDCProvider(t)
	var logs lockedBuffer
	var codes []string
	env, base := newOIDCEnv(t, p, nil)
	env.srv.log = slog.New(slog.NewTextHandler(&logs, nil))
	host := strings.TrimPrefix(p.Addr(), "http://")

	t.Run("the login page offers the provider beside the password form", func(t *testing.T) {
		_, doc := newBrowser(t, base).get("/login")
		link := testid(doc, "login-sso-link")
		if href, _ := link.Attr("href"); href != "/login/oidc" || strings.TrimSpace(link.Text()) != "Sign in with "+host {
			t.Fatalf("sign-in link %q %q", href, link.Text())
		}
		if testid(doc, "login-form").Length() != 1 {
			t.Fatal("no password form")
		}
		if _, doc := newBrowser(t, base).get("/login?next=/events"); testid(doc, "login-sso-link").AttrOr("href", "") != "/login/oidc?next=%2Fevents" {
			t.Fatalf("next not carried: %s", testid(doc, "login-sso-link").AttrOr("href", ""))
		}
	})
	t.Run("the provider is asked with PKCE S256, a nonce and the redirect URL", func(t *testing.T) {
		b := newBrowser(t, base)
		b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := b.client.Get(base + "/login/oidc")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc, _ := res.Location()
		q := loc.Query()
		if res.StatusCode != http.StatusSeeOther || loc.Host != host || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
			q.Get("nonce") == "" || q.Get("state") == "" || q.Get("redirect_uri") != base+"/login/oidc/callback" || q.Get("scope") != "openid email profile groups" {
			t.Fatalf("%d %s", res.StatusCode, loc)
		}
		var attempt *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == oidcCookie {
				attempt = c
			}
		}
		if attempt == nil || attempt.Path != "/login/oidc" || !attempt.HttpOnly || attempt.SameSite != http.SameSiteLaxMode || attempt.MaxAge != 600 ||
			strings.Contains(attempt.Value, q.Get("state")) {
			t.Fatalf("attempt cookie %+v", attempt)
		}
	})
	t.Run("a first sign-in provisions the user with the mapped role", func(t *testing.T) {
		p.queue("sub-ann", "ann@acme.test", true, "staff", "oncall")
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc?next=/endpoints")
		signedInAs(t, res, doc, "ann@acme.test", "/endpoints")
		id, role, iss, sub := env.userRow("ann@acme.test")
		if role != "operator" || iss == nil || *iss != p.Issuer() || *sub != "sub-ann" {
			t.Fatalf("role %s, issuer %v, subject %v", role, iss, sub)
		}
		if id == 0 || env.auditCount("user:ann@acme.test", "user.sso_provision") != 1 || env.auditCount("user:ann@acme.test", "user.sso_signin") != 1 {
			t.Fatal("provisioning or sign-in not audited")
		}
		if _, doc := b.get("/settings/users"); !strings.Contains(doc.Text(), "cannot do this") {
			t.Fatal("an operator reached the users page")
		}
	})
	t.Run("the role follows the claim at each sign-in", func(t *testing.T) {
		p.queue("sub-ann", "ann@acme.test", true, "hookline-admins")
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc?next=/settings/users")
		signedInAs(t, res, doc, "ann@acme.test", "/settings/users")
		if _, role, _, _ := env.userRow("ann@acme.test"); role != "admin" || env.auditCount("user:ann@acme.test", "user.sso_update") != 1 {
			t.Fatalf("role %s after the admin group", role)
		}
		p.queue("sub-ann", "ann@acme.test", true)
		res, doc = newBrowser(t, base).get("/login/oidc")
		signedInAs(t, res, doc, "ann@acme.test", "/")
		if _, role, _, _ := env.userRow("ann@acme.test"); role != "viewer" {
			t.Fatalf("role %s without a group", role)
		}
		// The earlier admin session now has the viewer's rights.
		if _, doc := b.get("/settings/users"); !strings.Contains(doc.Text(), "cannot do this") {
			t.Fatal("a demoted user kept the admin's rights")
		}
	})
	t.Run("a password user with the same verified email is linked", func(t *testing.T) {
		env.createDashUser("bob@acme.test", "admin")
		before, _, _, _ := env.userRow("bob@acme.test")
		p.queue("sub-bob", "bob@acme.test", true, "oncall")
		res, doc := newBrowser(t, base).get("/login/oidc")
		signedInAs(t, res, doc, "bob@acme.test", "/")
		id, role, _, sub := env.userRow("bob@acme.test")
		if id != before || role != "operator" || sub == nil || *sub != "sub-bob" || env.auditCount("user:bob@acme.test", "user.sso_link") != 1 {
			t.Fatalf("user %d (was %d), role %s, subject %v", id, before, role, sub)
		}
	})
	t.Run("an email whose user is linked to another account is refused", func(t *testing.T) {
		p.queue("sub-mallory", "ann@acme.test", true, "hookline-admins")
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc")
		refusedWith(t, b, res, doc, http.StatusForbidden, "signs in with another account")
	})
	t.Run("an unverified email is refused", func(t *testing.T) {
		p.queue("sub-carl", "carl@acme.test", false)
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc")
		refusedWith(t, b, res, doc, http.StatusForbidden, "is not verified")
		if countRows(t, env.pool, "users WHERE email = 'carl@acme.test'") != 0 {
			t.Fatal("an unverified email was provisioned")
		}
	})
	t.Run("an email domain not allowed is refused", func(t *testing.T) {
		p.queue("sub-dan", "dan@elsewhere.test", true, "hookline-admins")
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc")
		refusedWith(t, b, res, doc, http.StatusForbidden, "Accounts at elsewhere.test cannot sign in")
	})
	t.Run("a disabled user is refused", func(t *testing.T) {
		p.queue("sub-erin", "erin@acme.test", true)
		res, doc := newBrowser(t, base).get("/login/oidc")
		signedInAs(t, res, doc, "erin@acme.test", "/")
		env.exec("UPDATE users SET disabled_at = now() WHERE email = 'erin@acme.test'")
		p.queue("sub-erin", "erin@acme.test", true, "hookline-admins")
		b := newBrowser(t, base)
		res, doc = b.get("/login/oidc")
		refusedWith(t, b, res, doc, http.StatusForbidden, "is disabled")
		if _, role, _, _ := env.userRow("erin@acme.test"); role != "viewer" {
			t.Fatalf("a disabled user's role changed to %s", role)
		}
	})
	t.Run("a wrong state is refused", func(t *testing.T) {
		p.queue("sub-fay", "fay@acme.test", true)
		b := newBrowser(t, base)
		cb := b.toCallback()
		codes = append(codes, cb.Query().Get("code"))
		q := cb.Query()
		q.Set("state", "forged")
		cb.RawQuery = q.Encode()
		res, doc := b.get(cb.RequestURI())
		refusedWith(t, b, res, doc, http.StatusForbidden, "not started here")
	})
	t.Run("a callback without an attempt is refused", func(t *testing.T) {
		b := newBrowser(t, base)
		res, doc := b.get("/login/oidc/callback?code=abc&state=def")
		refusedWith(t, b, res, doc, http.StatusForbidden, "not started here")
	})
	t.Run("a replayed callback is refused", func(t *testing.T) {
		p.queue("sub-gus", "gus@acme.test", true)
		b := newBrowser(t, base)
		cb := b.toCallback()
		codes = append(codes, cb.Query().Get("code"))
		attempt := b.cookieFor(cb, oidcCookie)
		res, doc := b.get(cb.RequestURI())
		signedInAs(t, res, doc, "gus@acme.test", "/")
		// The same browser: its attempt is used up.
		b2 := newBrowser(t, base)
		b2.client.Jar.SetCookies(cb, b.client.Jar.Cookies(cb))
		res, doc = b2.get(cb.RequestURI())
		refusedWith(t, b2, res, doc, http.StatusForbidden, "not started here")
		// The attempt's cookie copied before it was used: the provider
		// takes a code once.
		b3 := newBrowser(t, base)
		b3.client.Jar.SetCookies(cb, []*http.Cookie{attempt})
		res, doc = b3.get(cb.RequestURI())
		refusedWith(t, b3, res, doc, http.StatusForbidden, "did not accept this sign-in")
	})
	t.Run("the provider's error is shown by its code", func(t *testing.T) {
		p.queue("sub-hal", "hal@acme.test", true)
		b := newBrowser(t, base)
		cb := b.toCallback()
		q := cb.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		q.Set("error_description", "<b>call +1 555 0100</b>")
		cb.RawQuery = q.Encode()
		res, doc := b.get(cb.RequestURI())
		refusedWith(t, b, res, doc, http.StatusForbidden, "ended the sign-in (access_denied)")
		if strings.Contains(doc.Text(), "555") {
			t.Fatal("the provider's description was shown")
		}
	})
	tampered := []struct {
		name   string
		tamper func(jwt.MapClaims)
	}{
		{"a wrong nonce", func(c jwt.MapClaims) { c["nonce"] = "forged" }},
		{"no nonce", func(c jwt.MapClaims) { delete(c, "nonce") }},
		{"a wrong audience", func(c jwt.MapClaims) { c["aud"] = []string{"another-client"} }},
		{"a wrong issuer", func(c jwt.MapClaims) { c["iss"] = "http://127.0.0.1:1/oidc" }},
		{"an expired token", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }},
	}
	for _, tc := range tampered {
		t.Run("an ID token with "+tc.name+" is refused", func(t *testing.T) {
			p.queue("sub-ivy", "ivy@acme.test", true, "hookline-admins")
			p.tamperNext(tc.tamper)
			b := newBrowser(t, base)
			res, doc := b.get("/login/oidc")
			refusedWith(t, b, res, doc, http.StatusForbidden, "could not be verified")
		})
	}
	t.Run("tokens and codes are never logged", func(t *testing.T) {
		out := logs.String()
		if !strings.Contains(out, "single sign-on refused") || !strings.Contains(out, "dashboard single sign-on") {
			t.Fatalf("sign-ins not logged:\n%s", out)
		}
		if strings.Contains(out, "eyJ") {
			t.Fatalf("a JWT in the log:\n%s", out)
		}
		for _, code := range codes {
			if code == "" || strings.Contains(out, code) {
				t.Fatalf("code %q in the log", code)
			}
		}
	})
}

func TestOIDCDefaultRoleNone(t *testing.T) {
	t.Parallel()
	p := newOIDCProvider(t)
	_, base := newOIDCEnv(t, p, func(c *sso.Config) { c.DefaultRole = "" })
	p.queue("sub-jo", "jo@acme.test", true, "staff")
	b := newBrowser(t, base)
	res, doc := b.get("/login/oidc")
	refusedWith(t, b, res, doc, http.StatusForbidden, "no hookline role")
	p.queue("sub-jo", "jo@acme.test", true, "staff", "oncall")
	res, doc = b.get("/login/oidc")
	signedInAs(t, res, doc, "jo@acme.test", "/")
}

func TestOIDCPasswordLoginOff(t *testing.T) {
	t.Parallel()
	p := newOIDCProvider(t)
	env, base := newOIDCEnv(t, p, func(c *sso.Config) { c.PasswordLogin = false })
	env.createDashUser("kim@acme.test", "admin")
	b := newBrowser(t, base)
	_, doc := b.get("/login")
	if testid(doc, "login-form").Length() != 0 || doc.Find("input[type=password]").Length() != 0 {
		t.Fatal("the password form is shown")
	}
	if !testid(doc, "login-sso-link").HasClass("btn-primary") {
		t.Fatal("the single sign-on button is not the page's primary action")
	}
	res, doc := b.postForm("/login", url.Values{"login_token": {"x"}, "email": {"kim@acme.test"}, "password": {dashPassword}})
	refusedWith(t, b, res, doc, http.StatusForbidden, "Password sign-in is turned off")
	p.queue("sub-kim", "kim@acme.test", true, "hookline-admins")
	res, doc = b.get("/login/oidc")
	signedInAs(t, res, doc, "kim@acme.test", "/")
}

// TestOIDCProviderUnreachable: hookline starts while its provider is down,
// a sign-in then says the provider cannot be reached (503, the login page),
// and the next sign-in once it is up discovers it and works.
func TestOIDCProviderUnreachable(t *testing.T) {
	t.Parallel()
	// A port below the kernel's ephemeral range (32768-60999 on Linux):
	// one it hands out for ":0" can be taken as the source port of
	// another test's outgoing connection before the provider listens on
	// it again below.
	var ln net.Listener
	var err error
	for range 200 {
		if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("no free loopback port between 20000 and 32000: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &oidcProvider{MockOIDC: m}
	// The issuer mockoidc will have once it listens at addr.
	issuer := "http://" + addr + mockoidc.IssuerBase
	_, base := newOIDCEnv(t, p, func(c *sso.Config) { c.Issuer = issuer })
	b := newBrowser(t, base)
	if res, doc := b.get("/login"); res.StatusCode != http.StatusOK || testid(doc, "login-sso-link").Length() != 1 {
		t.Fatalf("login page: %d", res.StatusCode)
	}
	res, doc := b.get("/login/oidc")
	refusedWith(t, b, res, doc, http.StatusServiceUnavailable, "cannot be reached right now")
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the provider's port was taken meanwhile: %v", err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	p.queue("sub-noa", "noa@acme.test", true)
	res, doc = b.get("/login/oidc")
	signedInAs(t, res, doc, "noa@acme.test", "/")
}

func TestOIDCOff(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	b := newBrowser(t, base)
	if _, doc := b.get("/login"); testid(doc, "login-sso").Length() != 0 || testid(doc, "login-form").Length() != 1 {
		t.Fatal("single sign-on offered without a provider")
	}
	for _, path := range []string{"/login/oidc", "/login/oidc/callback?code=x&state=y"} {
		if res, _ := b.get(path); res.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
	}
}

// TestOIDCSkipsHooklineSecondFactor: with HOOKLINE_REQUIRE_2FA=all, a
// single sign-on reaches the dashboard (the provider owns the second
// factor), while the same user signing in with a password is sent to set
// up hookline's own.
func TestOIDCSkipsHooklineSecondFactor(t *testing.T) {
	t.Parallel()
	p := newOIDCProvider(t)
	env, base := newOIDCEnv(t, p, nil)
	pw := env.signIn(base, "pat@acme.test", "operator") // before the rule
	env.srv.cfg.Require2FA = "all"
	p.queue("sub-kim", "kim@acme.test", true, "oncall")
	b := newBrowser(t, base)
	res, doc := b.get("/login/oidc")
	signedInAs(t, res, doc, "kim@acme.test", "/")
	if res, _ := b.get("/endpoints"); res.Request.URL.Path != "/endpoints" {
		t.Fatalf("a single sign-on was sent to %s", res.Request.URL.Path)
	}
	if res, _ := pw.get("/endpoints"); res.Request.URL.Path != "/account" {
		t.Fatalf("a password sign-in without two-factor reached %s", res.Request.URL.Path)
	}
}
