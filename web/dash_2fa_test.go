package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/hookline/hookline/web/twofactor"
	"github.com/hookline/hookline/worker/ssrf"
)

// testClock is a server clock a test moves: codes are computed for it, and
// moving it on reaches the next time step (or refills the throttle)
// without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Now()} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// code is the authenticator app's code for secret now; each call moves the
// clock on a step first, as a person waits for the next code.
func (c *testClock) code(t testing.TB, secret string) string {
	t.Helper()
	c.advance(twofactor.Period)
	code, err := twofactor.Code(secret, c.now())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// passwordStep signs in with the password and returns the page it lands
// on (the code step for a user with two-factor sign-in on).
func passwordStep(t *testing.T, base, email string) (*browser, *http.Response, *goquery.Document) {
	t.Helper()
	b := newBrowser(t, base)
	_, doc := b.get("/login")
	token, _ := doc.Find(`input[name=login_token]`).Attr("value")
	res, doc := b.postForm("/login", url.Values{"login_token": {token}, "email": {email}, "password": {dashPassword}})
	return b, res, doc
}

// codeStep posts a code on the code page doc.
func codeStep(b *browser, doc *goquery.Document, code string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	token, _ := doc.Find(`input[name=code_token]`).Attr("value")
	return b.postForm(loginCodePath, url.Values{"code_token": {token}, "code": {code}})
}

// enrol sets up two-factor sign-in on the account page and returns the
// secret shown and the recovery codes.
func enrol(t *testing.T, b *browser, clock *testClock) (string, []string) {
	t.Helper()
	b.get("/account")
	res, doc := b.postForm("/account/2fa/setup", url.Values{})
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/account" || doc.Find("[data-testid=totp-qr] path").Length() != 1 {
		t.Fatalf("setup: %d at %s, QR %d", res.StatusCode, res.Request.URL, doc.Find("[data-testid=totp-qr] path").Length())
	}
	secret := strings.ReplaceAll(doc.Find("#totp-secret").Text(), " ", "")
	if len(secret) != 32 {
		t.Fatalf("secret shown: %q", secret)
	}
	res, doc = b.postForm("/account/2fa/enable", url.Values{"code": {clock.code(t, secret)}})
	codes := strings.Fields(doc.Find("#recovery-codes").Text())
	if res.StatusCode != http.StatusOK || testid(doc, "two-factor").AttrOr("data-state", "") != "on" || len(codes) != 10 {
		t.Fatalf("enable: %d, state %q, %d recovery codes", res.StatusCode, testid(doc, "two-factor").AttrOr("data-state", ""), len(codes))
	}
	return secret, codes
}

func (e *testEnv) auditCountFor(action, email string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = $1 AND details->>'email' = $2`, action, email).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestTwoFactorSignIn(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	env := newEnv(t, func(c *Config) { c.Now = clock.now })
	base := env.server()
	const email = "ops@hookline.test"
	env.createDashUser(email, "operator")
	b, _, _ := passwordStep(t, base, email)

	var secret string
	var codes []string
	t.Run("enrol: the secret is shown once and sealed at rest", func(t *testing.T) {
		_, doc := b.get("/account")
		if got := testid(doc, "two-factor").AttrOr("data-state", ""); got != "off" {
			t.Fatalf("state %q before enrolling", got)
		}
		res, doc := b.postForm("/account/2fa/setup", url.Values{})
		shown := strings.ReplaceAll(doc.Find("#totp-secret").Text(), " ", "")
		if res.StatusCode != http.StatusOK || len(shown) != 32 {
			t.Fatalf("setup: %d, secret %q", res.StatusCode, shown)
		}
		var sealed []byte
		if err := env.pool.QueryRow(context.Background(), `SELECT secret FROM user_totp t JOIN users u ON u.id = t.user_id WHERE u.email = $1`, email).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(sealed), shown) {
			t.Fatal("the secret is stored in plain text")
		}
		_, doc = b.get("/account")
		if doc.Find("#totp-secret").Length() != 0 || testid(doc, "two-factor-pending").Length() != 1 {
			t.Fatal("the secret is shown again on a reload")
		}
		res, doc = b.postForm("/account/2fa/enable", url.Values{"code": {"000000"}})
		if res.StatusCode != http.StatusUnprocessableEntity || doc.Find(`[data-field=code] [data-testid=field-error]`).Length() != 1 {
			t.Fatalf("a wrong first code: %d", res.StatusCode)
		}
		res, doc = b.postForm("/account/2fa/enable", url.Values{"code": {clock.code(t, shown)}})
		codes = strings.Fields(doc.Find("#recovery-codes").Text())
		if res.StatusCode != http.StatusOK || testid(doc, "two-factor").AttrOr("data-state", "") != "on" || len(codes) != 10 {
			h, _ := doc.Html()
			t.Fatalf("enable: %d, %d recovery codes %s", res.StatusCode, len(codes), h)
		}
		secret = shown
		_, doc = b.get("/account")
		if doc.Find("#recovery-codes").Length() != 0 || testid(doc, "recovery-left").Text() != "10" {
			t.Fatal("the recovery codes are shown again on a reload")
		}
		var stored int
		_ = env.pool.QueryRow(context.Background(), `SELECT count(*) FROM user_recovery_codes WHERE position(convert_to($1, 'UTF8') in code_hash) > 0`, codes[0]).Scan(&stored)
		if stored != 0 || countRows(t, env.pool, "user_recovery_codes") != 10 {
			t.Fatal("recovery codes stored in plain text, or not ten")
		}
		if env.auditCountFor("user.2fa.setup", email) != 1 || env.auditCountFor("user.2fa.enable", email) != 1 {
			t.Fatal("setup and enable are not audited")
		}
		var leaked int
		_ = env.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE details::text LIKE '%' || $1 || '%' OR details::text LIKE '%' || $2 || '%'`, secret, codes[0]).Scan(&leaked)
		if leaked != 0 {
			t.Fatal("the audit log holds the secret or a recovery code")
		}
	})

	t.Run("the password alone starts no session", func(t *testing.T) {
		before := countRows(t, env.pool, "user_sessions")
		nb, res, doc := passwordStep(t, base, email)
		if res.Request.URL.Path != loginCodePath || testid(doc, "login-code-form").Length() != 1 {
			t.Fatalf("after the password: %d at %s", res.StatusCode, res.Request.URL)
		}
		if countRows(t, env.pool, "user_sessions") != before {
			t.Fatal("a session started before the code")
		}
		if res, _ := nb.get("/"); res.Request.URL.Path != "/login" {
			t.Fatal("the dashboard is open before the code")
		}
	})

	t.Run("wrong code", func(t *testing.T) {
		nb, _, doc := passwordStep(t, base, email)
		res, doc := codeStep(nb, doc, "123456")
		if res.StatusCode != http.StatusUnauthorized || testid(doc, "login-code-error").Length() != 1 {
			t.Fatalf("wrong code: %d", res.StatusCode)
		}
		res, doc = codeStep(nb, doc, "not a code")
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("malformed code: %d", res.StatusCode)
		}
		res, _ = codeStep(nb, doc, clock.code(t, secret))
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/" || testid(mustDoc(t, nb, "/"), "nav").Length() != 1 {
			t.Fatalf("right code after wrong ones: %d at %s", res.StatusCode, res.Request.URL)
		}
	})

	t.Run("a code works once", func(t *testing.T) {
		code := clock.code(t, secret)
		first, _, doc := passwordStep(t, base, email)
		if res, _ := codeStep(first, doc, code); res.Request.URL.Path != "/" {
			t.Fatalf("first use: %d at %s", res.StatusCode, res.Request.URL)
		}
		second, _, doc := passwordStep(t, base, email)
		if res, _ := codeStep(second, doc, code); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the same code again: %d, want 401", res.StatusCode)
		}
		// An earlier step's code, still inside the skew, after a later one.
		earlier, _ := twofactor.Code(secret, clock.now().Add(-twofactor.Period))
		if res, _ := codeStep(second, doc, earlier); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an older code after a newer one: %d, want 401", res.StatusCode)
		}
	})

	t.Run("a recovery code works once", func(t *testing.T) {
		nb, _, doc := passwordStep(t, base, email)
		if res, _ := codeStep(nb, doc, strings.ToUpper(codes[0])); res.Request.URL.Path != "/" {
			t.Fatalf("recovery code: %d at %s", res.StatusCode, res.Request.URL)
		}
		if env.auditCountFor("user.recovery_code.use", email) != 1 {
			t.Fatal("using a recovery code is not audited")
		}
		again, _, doc := passwordStep(t, base, email)
		if res, _ := codeStep(again, doc, codes[0]); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a used recovery code: %d, want 401", res.StatusCode)
		}
		if _, doc := nb.get("/account"); testid(doc, "recovery-left").Text() != "9" {
			t.Fatalf("recovery codes left: %q", testid(doc, "recovery-left").Text())
		}
	})

	t.Run("a pending sign-in expires", func(t *testing.T) {
		nb, _, doc := passwordStep(t, base, email)
		clock.advance(pendingSignInTTL)
		res, doc := codeStep(nb, doc, clock.code(t, secret))
		if res.StatusCode != http.StatusForbidden || testid(doc, "login-form").Length() != 1 {
			t.Fatalf("after %s: %d", pendingSignInTTL, res.StatusCode)
		}
		if res, _ := nb.get(loginCodePath); res.Request.URL.Path != "/login" {
			t.Fatalf("the code page without a pending sign-in: at %s", res.Request.URL)
		}
	})

	t.Run("wrong codes are throttled per account", func(t *testing.T) {
		clock.advance(10 * time.Minute) // full buckets
		nb, _, doc := passwordStep(t, base, email)
		var last int
		for range 6 {
			res, _ := codeStep(nb, doc, "000000")
			last = res.StatusCode
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("6th wrong code: %d, want 429", last)
		}
		if res, _ := codeStep(nb, doc, clock.code(t, secret)); res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a right code while throttled: %d, want 429", res.StatusCode)
		}
		clock.advance(10 * time.Minute)
	})

	t.Run("new recovery codes need a code", func(t *testing.T) {
		res, _ := b.postForm("/account/2fa/recovery-codes", url.Values{"code": {"000000"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("without a right code: %d", res.StatusCode)
		}
		res, doc := b.postForm("/account/2fa/recovery-codes", url.Values{"code": {clock.code(t, secret)}})
		fresh := strings.Fields(doc.Find("#recovery-codes").Text())
		if res.StatusCode != http.StatusOK || len(fresh) != 10 || fresh[0] == codes[1] {
			t.Fatalf("new codes: %d, %d", res.StatusCode, len(fresh))
		}
		old, _, doc := passwordStep(t, base, email)
		if res, _ := codeStep(old, doc, codes[1]); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an old recovery code after new ones: %d", res.StatusCode)
		}
		codes = fresh
		if env.auditCountFor("user.2fa.recovery_codes", email) != 1 {
			t.Fatal("new recovery codes are not audited")
		}
	})

	t.Run("turning off needs a code", func(t *testing.T) {
		clock.advance(10 * time.Minute)
		res, _ := b.postForm("/account/2fa/disable", url.Values{"code": {""}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("without a code: %d", res.StatusCode)
		}
		res, doc := b.postForm("/account/2fa/disable", url.Values{"code": {codes[0]}})
		if res.StatusCode != http.StatusOK || testid(doc, "two-factor").AttrOr("data-state", "") != "off" {
			t.Fatalf("with a recovery code: %d", res.StatusCode)
		}
		if countRows(t, env.pool, "user_totp") != 0 || countRows(t, env.pool, "user_recovery_codes") != 0 {
			t.Fatal("the secret or recovery codes outlive turning off")
		}
		if env.auditCountFor("user.2fa.disable", email) != 1 {
			t.Fatal("turning off is not audited")
		}
		if _, res, _ := passwordStep(t, base, email); res.Request.URL.Path != "/" {
			t.Fatalf("the password alone after turning off: at %s", res.Request.URL)
		}
	})
}

// mustDoc fetches a page and returns its document.
func mustDoc(t *testing.T, b *browser, path string) *goquery.Document {
	t.Helper()
	_, doc := b.get(path)
	return doc
}

func TestRequire2FA(t *testing.T) {
	t.Parallel()
	t.Run("which roles each value covers", func(t *testing.T) {
		for mode, want := range map[string]string{"": "", "admin": "admin", "operator": "operator admin", "all": "viewer operator admin"} {
			s := &Server{cfg: Config{Require2FA: mode}}
			var got []string
			for _, role := range []string{"viewer", "operator", "admin"} {
				if s.twoFactorRequired(role) {
					got = append(got, role)
				}
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%q covers %v, want %s", mode, got, want)
			}
		}
	})

	clock := newTestClock()
	env := newEnv(t, func(c *Config) { c.Now = clock.now; c.Require2FA = Require2FAOperator })
	if _, err := New(Config{Pool: env.pool, Guard: ssrf.New(nil), SecretKey: testKey(1), SessionKey: testKey(2), Require2FA: "viewer"}); err == nil {
		t.Error("New took an unknown Require2FA")
	}
	base := env.server()
	env.createDashUser("viewer@hookline.test", "viewer")
	env.createDashUser("ops@hookline.test", "operator")

	t.Run("a role not covered signs in as before", func(t *testing.T) {
		_, res, _ := passwordStep(t, base, "viewer@hookline.test")
		if res.Request.URL.Path != "/" {
			t.Fatalf("viewer landed at %s", res.Request.URL)
		}
	})

	t.Run("a covered role without it reaches only its account page", func(t *testing.T) {
		b, res, doc := passwordStep(t, base, "ops@hookline.test")
		if res.Request.URL.Path != "/account" || testid(doc, "two-factor-required").Length() != 1 || !strings.Contains(testid(doc, "flashes").Text(), "two-factor") {
			t.Fatalf("landed at %s", res.Request.URL)
		}
		if res, _ := b.get("/endpoints"); res.Request.URL.Path != "/account" {
			t.Fatalf("/endpoints: at %s", res.Request.URL)
		}
		res, _ = b.htmx(http.MethodGet, "/endpoints/table", url.Values{})
		if res.StatusCode != http.StatusForbidden || res.Header.Get("HX-Redirect") != "/account" {
			t.Fatalf("htmx: %d, HX-Redirect %q", res.StatusCode, res.Header.Get("HX-Redirect"))
		}
		if res, _ := b.postForm("/endpoints/1/pause", url.Values{}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("a POST elsewhere: %d, want 403", res.StatusCode)
		}
		if res, _ := b.get("/static/css/hookline.css"); res.StatusCode != http.StatusOK {
			t.Fatalf("static assets: %d", res.StatusCode)
		}
		enrol(t, b, clock)
		if res, _ := b.get("/endpoints"); res.Request.URL.Path != "/endpoints" || res.StatusCode != http.StatusOK {
			t.Fatalf("/endpoints after enrolling: %d at %s", res.StatusCode, res.Request.URL)
		}
		if res, _ := b.postForm("/logout", url.Values{}); res.Request.URL.Path != "/login" {
			t.Fatalf("logout: at %s", res.Request.URL)
		}
	})

	t.Run("an admin resets a lost device", func(t *testing.T) {
		// The admin is covered too ("operator" covers admins).
		env.createDashUser("admin@hookline.test", "admin")
		admin, res, _ := passwordStep(t, base, "admin@hookline.test")
		if res.Request.URL.Path != "/account" {
			t.Fatalf("an admin without two-factor sign-in landed at %s", res.Request.URL)
		}
		enrol(t, admin, clock)
		user, _, codePage := passwordStep(t, base, "ops@hookline.test")
		_, doc := admin.get("/settings/users")
		row := doc.Find(`[data-testid=user-row][data-email="ops@hookline.test"]`)
		if row.Find("[data-testid=user-2fa-reset]").Length() != 1 {
			t.Fatal("no reset button for a user with two-factor sign-in")
		}
		if doc.Find(`[data-testid=user-row][data-email="admin@hookline.test"] [data-testid=user-2fa-reset]`).Length() != 0 {
			t.Fatal("an admin is offered to reset their own")
		}
		action, _ := row.Find("form:has([data-testid=user-2fa-reset])").Attr("action")
		res, doc = admin.postForm(action, url.Values{})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/settings/users" ||
			doc.Find(`[data-testid=user-row][data-email="ops@hookline.test"] [data-testid=user-2fa-reset]`).Length() != 0 {
			t.Fatalf("reset: %d at %s", res.StatusCode, res.Request.URL)
		}
		if env.auditCountFor("user.2fa.reset", "ops@hookline.test") != 1 {
			t.Fatal("the reset is not audited")
		}
		var left int
		_ = env.pool.QueryRow(context.Background(), `SELECT count(*) FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE u.email = 'ops@hookline.test'`).Scan(&left)
		if left != 0 {
			t.Fatal("the user's sessions outlive the reset")
		}
		// The pending sign-in of before the reset does not get in.
		if res, _ := codeStep(user, codePage, clock.code(t, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")); res.StatusCode < 400 {
			t.Fatalf("a pending sign-in after the reset: %d", res.StatusCode)
		}
		// Signing in again asks no code, and sends to enrolment.
		if _, res, _ := passwordStep(t, base, "ops@hookline.test"); res.Request.URL.Path != "/account" {
			t.Fatalf("after the reset: at %s", res.Request.URL)
		}
		// Their own: refused.
		var adminID int64
		_ = env.pool.QueryRow(context.Background(), `SELECT id FROM users WHERE email = 'admin@hookline.test'`).Scan(&adminID)
		if res, _ := admin.postForm("/settings/users/"+strconv.FormatInt(adminID, 10)+"/2fa/reset", url.Values{}); res.StatusCode != http.StatusConflict {
			t.Fatalf("an admin resetting their own: %d, want 409", res.StatusCode)
		}
	})
}
