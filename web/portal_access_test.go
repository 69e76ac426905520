package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// portalLink asks the link API for a sign-in link and returns it as a path
// (the API answers with the address it was called at).
func (e *testEnv) portalLink(partnerID int64) string {
	e.t.Helper()
	rec := e.do(http.MethodPost, "/api/v1/partners/"+itoa64(partnerID)+"/portal-links", nil)
	mustStatus(e.t, rec, http.StatusCreated)
	body := decodeBody[struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}](e.t, rec)
	u, err := url.Parse(body.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.RequestURI()
}

// openPortalLink follows a sign-in link as a browser without script does:
// the GET shows the sign-in page, whose Continue button posts the token.
// A refusal page (no form) is returned as it is.
func (b *browser) openPortalLink(link string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	res, doc := b.get(link)
	form := testid(doc, "portal-signin-form")
	if res.StatusCode != http.StatusOK || form.Length() == 0 {
		return res, doc
	}
	action, _ := form.Attr("action")
	token, _ := form.Find("input[name=token]").Attr("value")
	csrf, _ := form.Find("input[name=csrf_token]").Attr("value")
	return b.postForm(action, url.Values{"token": {token}, "csrf_token": {csrf}})
}

// signInPageBrowser is a browser that was shown a sign-in page (of a new
// link of the partner), so its posts carry that page's CSRF cookie and
// token: posting another token through it reaches the link checks.
func (e *testEnv) signInPageBrowser(base string, partnerID int64) *postingBrowser {
	e.t.Helper()
	b := newBrowser(e.t, base)
	_, doc := b.get(e.portalLink(partnerID))
	csrf, ok := testid(doc, "portal-signin-form").Find("input[name=csrf_token]").Attr("value")
	if !ok {
		e.t.Fatal("the sign-in page has no csrf_token field")
	}
	return &postingBrowser{b, csrf}
}

type postingBrowser struct {
	*browser
	csrf string
}

func (b *postingBrowser) postForm(path string, form url.Values) (*http.Response, *goquery.Document) {
	form.Set("csrf_token", b.csrf)
	return b.browser.postForm(path, form)
}

// portalSignIn opens a sign-in link in a fresh browser and checks that it
// lands on the partner's portal.
func (e *testEnv) portalSignIn(base string, partnerID int64, partnerName string) *browser {
	e.t.Helper()
	b := newBrowser(e.t, base)
	res, doc := b.openPortalLink(e.portalLink(partnerID))
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/portal/" {
		e.t.Fatalf("portal sign-in: %d at %s", res.StatusCode, res.Request.URL)
	}
	if got := testid(doc, "portal-partner").Text(); got != partnerName {
		e.t.Fatalf("portal signed in as %q, want %q", got, partnerName)
	}
	return b
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func refusal(doc *goquery.Document) string { return testid(doc, "error-message").Text() }

func TestPortalLinkAPI(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")

	t.Run("201 with url and expiry, default one hour", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/partners/"+itoa64(pid)+"/portal-links", nil)
		mustStatus(t, rec, http.StatusCreated)
		body := decodeBody[struct {
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}](t, rec)
		if !strings.HasPrefix(body.URL, base+"/portal/signin?token=") || len(body.URL) < 60 {
			t.Fatalf("url %q", body.URL)
		}
		if d := time.Until(body.ExpiresAt); d < 59*time.Minute || d > 61*time.Minute {
			t.Fatalf("expires in %s, want 1 h", d)
		}
		var stored int
		token := strings.TrimPrefix(body.URL, base+"/portal/signin?token=")
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM portal_links WHERE token_hash = $1 OR token_hash = $2", token, hashSessionID(token)).Scan(&stored); err != nil || stored != 1 {
			t.Fatalf("stored rows matching the hash: %d (%v)", stored, err)
		}
		var raw int
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM portal_links WHERE token_hash = $1", token).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if raw != 0 {
			t.Fatal("the raw token is stored")
		}
	})
	t.Run("no public URL: no link, and a clear 409 naming the setting", func(t *testing.T) {
		env2 := newEnvWithPool(t, env.pool, func(c *Config) { c.Portal = PortalConfig{} })
		// Whatever the Host header says, no link is built from it.
		rec := env2.do(http.MethodPost, "/api/v1/partners/"+itoa64(pid)+"/portal-links", nil, "Host", "attacker.invalid")
		body := mustError(t, rec, http.StatusConflict, "")
		if !strings.Contains(body.Error.Message, "HOOKLINE_PUBLIC_URL") || strings.Contains(rec.Body.String(), "attacker.invalid") {
			t.Fatalf("answer %s", rec.Body.String())
		}
	})
	t.Run("configured lifetime and public URL", func(t *testing.T) {
		env2 := newEnvWithPool(t, env.pool, func(c *Config) {
			c.Portal = PortalConfig{LinkTTL: 5 * time.Minute, PublicURL: "https://hooks.test"}
		})
		rec := env2.do(http.MethodPost, "/api/v1/partners/"+itoa64(pid)+"/portal-links", nil)
		mustStatus(t, rec, http.StatusCreated)
		body := decodeBody[struct {
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}](t, rec)
		if d := time.Until(body.ExpiresAt); d < 4*time.Minute || d > 6*time.Minute {
			t.Fatalf("expires in %s, want 5 min", d)
		}
		if !strings.HasPrefix(body.URL, "https://hooks.test/portal/signin?token=") {
			t.Fatalf("url %q", body.URL)
		}
	})
	t.Run("needs an API key", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners/"+itoa64(pid)+"/portal-links", nil, "Authorization", ""), http.StatusUnauthorized, "")
		mustError(t, env.do(http.MethodDelete, "/api/v1/partners/"+itoa64(pid)+"/portal-sessions", nil, "Authorization", "Bearer nope"), http.StatusUnauthorized, "")
	})
	t.Run("unknown partner is 404", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/partners/999999/portal-links", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodPost, "/api/v1/partners/abc/portal-links", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodDelete, "/api/v1/partners/999999/portal-sessions", nil), http.StatusNotFound, "")
	})
	t.Run("archived partner is 409", func(t *testing.T) {
		gone := env.createPartner("Gone")
		env.exec("UPDATE partners SET archived_at = now() WHERE id = $1", gone)
		mustError(t, env.do(http.MethodPost, "/api/v1/partners/"+itoa64(gone)+"/portal-links", nil), http.StatusConflict, "")
	})
	t.Run("opening the link does not use it: a previewer's GET leaves it working", func(t *testing.T) {
		link := env.portalLink(pid)
		token := strings.TrimPrefix(link, "/portal/signin?token=")
		for _, path := range []string{link, link, "/portal/links/" + token} {
			res, doc := newBrowser(t, base).get(path) // a previewer: no script, no form post
			form := testid(doc, "portal-signin-form")
			if res.StatusCode != http.StatusOK || form.Length() != 1 || res.Request.URL.Path == "/portal/" {
				t.Fatalf("GET %s: %d at %s", path, res.StatusCode, res.Request.URL)
			}
			if v, _ := form.Find("input[name=token]").Attr("value"); v != token {
				t.Fatalf("the form posts token %q, want the link's", v)
			}
			if _, auto := form.Attr("data-autosubmit"); testid(doc, "portal-signin-continue").Length() != 1 || !auto {
				t.Fatal("no Continue button or no auto-submit")
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Fatalf("Cache-Control %q", cc)
			}
		}
		var used int
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM portal_links WHERE token_hash = $1 AND used_at IS NOT NULL", hashSessionID(token)).Scan(&used); err != nil || used != 0 {
			t.Fatalf("GETs used the link: %d (%v)", used, err)
		}
		var sessions int
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM portal_sessions s JOIN portal_links l ON l.id = s.link_id WHERE l.token_hash = $1", hashSessionID(token)).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		if sessions != 0 {
			t.Fatalf("GETs started %d sessions", sessions)
		}
		// The person clicking it afterwards still signs in, once.
		res, doc := newBrowser(t, base).openPortalLink(link)
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/portal/" || testid(doc, "portal-partner").Text() != "Acme" {
			t.Fatalf("sign in after previews: %d at %s", res.StatusCode, res.Request.URL)
		}
		res, _ = env.signInPageBrowser(base, pid).postForm("/portal/signin", url.Values{"token": {token}})
		if res.StatusCode != http.StatusGone {
			t.Fatalf("second POST: %d", res.StatusCode)
		}
		res, _ = env.signInPageBrowser(base, pid).postForm("/portal/signin", url.Values{"token": {"not-a-token"}})
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown token POST: %d", res.StatusCode)
		}
	})
	t.Run("login CSRF: a POST without this browser's sign-in page is refused and spends nothing", func(t *testing.T) {
		link := env.portalLink(pid)
		token := strings.TrimPrefix(link, "/portal/signin?token=")
		// Another site auto-submits the attacker's link into the victim's
		// browser: no sign-in page was shown there, so no token matches.
		for _, form := range []url.Values{{"token": {token}}, {"token": {token}, "csrf_token": {"forged"}}} {
			res, _ := newBrowser(t, base).postForm("/portal/signin", form)
			if res.StatusCode != http.StatusForbidden || res.Request.URL.Path == "/portal/" {
				t.Fatalf("forged sign-in: %d at %s", res.StatusCode, res.Request.URL)
			}
		}
		// A token from another browser's page does not match this cookie.
		other := newBrowser(t, base)
		_, doc := other.get(link)
		csrf, _ := testid(doc, "portal-signin-form").Find("input[name=csrf_token]").Attr("value")
		if res, _ := env.signInPageBrowser(base, pid).browser.postForm("/portal/signin", url.Values{"token": {token}, "csrf_token": {csrf}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("another page's token: %d", res.StatusCode)
		}
		// The link is still good for the person it was made for.
		if res, _ := newBrowser(t, base).openPortalLink(link); res.Request.URL.Path != "/portal/" {
			t.Fatalf("the link no longer signs in: %d at %s", res.StatusCode, res.Request.URL)
		}
	})
	t.Run("single use", func(t *testing.T) {
		link := env.portalLink(pid)
		b := newBrowser(t, base)
		res, doc := b.openPortalLink(link)
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/portal/" || testid(doc, "portal-partner").Text() != "Acme" {
			t.Fatalf("first use: %d at %s", res.StatusCode, res.Request.URL)
		}
		other := newBrowser(t, base)
		res, doc = other.get(link)
		if res.StatusCode != http.StatusGone || !strings.Contains(refusal(doc), "already been used") {
			t.Fatalf("second use: %d %q", res.StatusCode, refusal(doc))
		}
		// The path form of the link is the same link.
		token := strings.TrimPrefix(link, "/portal/signin?token=")
		res, _ = newBrowser(t, base).get("/portal/links/" + token)
		if res.StatusCode != http.StatusGone {
			t.Fatalf("path form after use: %d", res.StatusCode)
		}
		res, _ = other.get("/portal/")
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("refused browser reaches the portal: %d", res.StatusCode)
		}
	})
	t.Run("path form signs in", func(t *testing.T) {
		link := env.portalLink(pid)
		res, doc := newBrowser(t, base).openPortalLink("/portal/links/" + strings.TrimPrefix(link, "/portal/signin?token="))
		if res.StatusCode != http.StatusOK || testid(doc, "portal-partner").Text() != "Acme" {
			t.Fatalf("path form: %d", res.StatusCode)
		}
	})
	t.Run("expired", func(t *testing.T) {
		link := env.portalLink(pid)
		env.exec("UPDATE portal_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL AND revoked_at IS NULL")
		res, doc := newBrowser(t, base).get(link)
		if res.StatusCode != http.StatusGone || !strings.Contains(refusal(doc), "expired") {
			t.Fatalf("expired link: %d %q", res.StatusCode, refusal(doc))
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		res, doc := newBrowser(t, base).get("/portal/signin?token=not-a-token")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(refusal(doc), "not valid") {
			t.Fatalf("unknown link: %d %q", res.StatusCode, refusal(doc))
		}
		res, _ = newBrowser(t, base).get("/portal/signin")
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("no token: %d", res.StatusCode)
		}
	})
	t.Run("revoke all: sessions signed out, unused links refused", func(t *testing.T) {
		b := env.portalSignIn(base, pid, "Acme")
		unused := env.portalLink(pid)
		other := env.createPartner("Other")
		ob := env.portalSignIn(base, other, "Other")
		rec := env.do(http.MethodDelete, "/api/v1/partners/"+itoa64(pid)+"/portal-sessions", nil)
		mustStatus(t, rec, http.StatusOK)
		got := decodeBody[map[string]int64](t, rec)
		if got["revoked_sessions"] < 1 || got["revoked_links"] < 1 {
			t.Fatalf("revoked %v", got)
		}
		res, doc := b.get("/portal/")
		if res.StatusCode != http.StatusUnauthorized || testid(doc, "portal-refused").Length() != 1 {
			t.Fatalf("revoked session: %d", res.StatusCode)
		}
		res, doc = newBrowser(t, base).get(unused)
		if res.StatusCode != http.StatusGone || !strings.Contains(refusal(doc), "revoked") {
			t.Fatalf("revoked link: %d %q", res.StatusCode, refusal(doc))
		}
		if res, _ := ob.get("/portal/"); res.StatusCode != http.StatusOK {
			t.Fatalf("another partner's session was revoked too: %d", res.StatusCode)
		}
		var n int
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM audit_log WHERE action = 'portal.revoke_all'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("revoke audited %d times", n)
		}
	})
	t.Run("idle and absolute limits", func(t *testing.T) {
		b := env.portalSignIn(base, pid, "Acme")
		env.exec("UPDATE portal_sessions SET last_seen_at = now() - interval '9 hours' WHERE revoked_at IS NULL AND partner_id = $1", pid)
		if res, _ := b.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("idle session: %d", res.StatusCode)
		}
		b = env.portalSignIn(base, pid, "Acme")
		env.exec("UPDATE portal_sessions SET created_at = now() - interval '8 days' WHERE revoked_at IS NULL AND partner_id = $1", pid)
		if res, _ := b.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("old session: %d", res.StatusCode)
		}
	})
	t.Run("sign out", func(t *testing.T) {
		b := env.portalSignIn(base, pid, "Acme")
		res, _ := b.postForm("/portal/signout", url.Values{})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("sign out: %d", res.StatusCode)
		}
		if res, _ := b.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("after sign out: %d", res.StatusCode)
		}
	})
}

// TestPortalDashboardSeparation: a portal session never reaches a
// dashboard route, and a dashboard session is not a portal session.
func TestPortalDashboardSeparation(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	partner := env.portalSignIn(base, pid, "Acme")
	admin := env.signIn(base, "admin@example.com", "admin")

	t.Run("portal cookie on dashboard routes", func(t *testing.T) {
		u, _ := url.Parse(base + "/portal/")
		var portalValue string
		for _, ck := range partner.client.Jar.Cookies(u) {
			if ck.Name == portalCookie {
				portalValue = ck.Value
			}
		}
		if portalValue == "" {
			t.Fatal("no portal cookie")
		}
		if cks := partner.client.Jar.Cookies(mustURL(t, base+"/endpoints")); len(cks) != 0 {
			t.Fatalf("the portal cookie is sent to dashboard paths: %v", cks)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, path := range []string{"/", "/endpoints", "/events", "/partners", "/audit", "/dead-letters"} {
			for _, name := range []string{portalCookie, sessionCookie} {
				req, _ := http.NewRequest(http.MethodGet, base+path, nil)
				req.AddCookie(&http.Cookie{Name: name, Value: portalValue})
				res, err := noFollow.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
					t.Fatalf("GET %s with the portal session as %s: %d %s", path, name, res.StatusCode, res.Header.Get("Location"))
				}
			}
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/partners/"+itoa64(pid)+"/portal-links", strings.NewReader("x=1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: portalValue})
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode < 400 {
			t.Fatalf("dashboard POST with a portal session: %d", res.StatusCode)
		}
	})
	t.Run("dashboard session on portal routes", func(t *testing.T) {
		for _, path := range []string{"/portal/", "/portal/events", "/portal/endpoints/1"} {
			res, doc := admin.get(path)
			if res.StatusCode != http.StatusUnauthorized || testid(doc, "portal-refused").Length() != 1 {
				t.Fatalf("admin on %s: %d", path, res.StatusCode)
			}
		}
		res, _ := admin.postForm("/portal/endpoints/1/pause", url.Values{})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("admin POST to the portal: %d", res.StatusCode)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPortalPartnerPage: the operator's "Share portal link", revokes and
// archiving, with role checks.
func TestPortalPartnerPage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	viewer := env.signIn(base, "viewer@example.com", "viewer")
	op := env.signIn(base, "op@example.com", "operator")

	_, doc := viewer.get("/partners/" + itoa64(pid))
	if testid(doc, "portal-access").Length() != 1 || testid(doc, "share-portal-link").Length() != 0 {
		t.Fatal("a viewer sees the share button (or no portal panel)")
	}
	res, _ := viewer.postForm("/partners/"+itoa64(pid)+"/portal-links", url.Values{})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer shares a link: %d", res.StatusCode)
	}

	_, doc = op.get("/partners/" + itoa64(pid))
	if testid(doc, "share-portal-link").Length() != 1 {
		t.Fatal("no share button for an operator")
	}
	_, doc = op.htmx(http.MethodPost, "/partners/"+itoa64(pid)+"/portal-links", url.Values{})
	link := testid(doc, "copybox-value").Text()
	if !strings.Contains(link, "/portal/signin?token=") {
		t.Fatalf("shared link %q", link)
	}
	if testid(doc, "portal-unused-link").Length() != 1 {
		t.Fatal("the unused link is not listed")
	}
	// Without JavaScript the form posts and the page comes back with it.
	res, doc = op.postForm("/partners/"+itoa64(pid)+"/portal-links", url.Values{})
	if res.StatusCode != http.StatusOK || !strings.Contains(testid(doc, "portal-link").Text(), "/portal/signin?token=") {
		t.Fatalf("share without htmx: %d", res.StatusCode)
	}
	// Shown once: the page does not show it again.
	_, doc = op.get("/partners/" + itoa64(pid))
	if strings.Contains(doc.Text(), link) {
		t.Fatal("the link is shown again")
	}
	u := mustURL(t, link)
	partner := newBrowser(t, base)
	if res, _ := partner.openPortalLink(u.RequestURI()); res.StatusCode != http.StatusOK {
		t.Fatalf("shared link: %d", res.StatusCode)
	}
	_, doc = op.get("/partners/" + itoa64(pid))
	sid, ok := testid(doc, "portal-session").Attr("data-session-id")
	if !ok {
		t.Fatal("the session is not listed")
	}
	res, _ = op.postForm("/partners/"+itoa64(pid)+"/portal-sessions/"+sid+"/revoke", url.Values{})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revoke session: %d", res.StatusCode)
	}
	if res, _ := partner.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked session: %d", res.StatusCode)
	}
	// Revoking another partner's session id through this partner is 404.
	other := env.createPartner("Other")
	ob := env.portalSignIn(base, other, "Other")
	var otherSID string
	if err := env.pool.QueryRow(t.Context(), "SELECT id::text FROM portal_sessions WHERE partner_id = $1 AND revoked_at IS NULL", other).Scan(&otherSID); err != nil {
		t.Fatal(err)
	}
	res, _ = op.postForm("/partners/"+itoa64(pid)+"/portal-sessions/"+otherSID+"/revoke", url.Values{})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("revoke another partner's session: %d", res.StatusCode)
	}
	if res, _ := ob.get("/portal/"); res.StatusCode != http.StatusOK {
		t.Fatalf("the other partner was signed out: %d", res.StatusCode)
	}

	// A link revoked from the page no longer signs in.
	unused := env.portalLink(pid)
	_, doc = op.get("/partners/" + itoa64(pid))
	lid, _ := testid(doc, "portal-unused-link").Attr("data-link-id")
	if res, _ := op.postForm("/partners/"+itoa64(pid)+"/portal-links/"+lid+"/revoke", url.Values{}); res.StatusCode != http.StatusOK {
		t.Fatalf("revoke link: %d", res.StatusCode)
	}
	if res, _ := newBrowser(t, base).get(unused); res.StatusCode != http.StatusGone {
		t.Fatalf("revoked link: %d", res.StatusCode)
	}

	// Archiving the partner ends its sessions and links.
	b := env.portalSignIn(base, pid, "Acme")
	unused = env.portalLink(pid)
	if res, _ := op.postForm("/partners/"+itoa64(pid)+"/archive", url.Values{"archived": {"true"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("archive: %d", res.StatusCode)
	}
	if res, _ := b.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("archived partner's session: %d", res.StatusCode)
	}
	env.exec("UPDATE partners SET archived_at = NULL WHERE id = $1", pid)
	if res, _ := b.get("/portal/"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("session back after unarchiving: %d", res.StatusCode)
	}
	if res, _ := newBrowser(t, base).get(unused); res.StatusCode != http.StatusGone {
		t.Fatalf("archived partner's link: %d", res.StatusCode)
	}
}
