package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"golang.org/x/crypto/bcrypt"

	"github.com/hookline/hookline/db"
)

// browser is a cookie-keeping client of a running test server, signed in
// as one user.
type browser struct {
	t      testing.TB
	base   string
	client *http.Client
	csrf   string
}

// server serves the env on a loopback port; portal links start with its
// address, as they would with HOOKLINE_PUBLIC_URL set to it (unless the
// test set another).
func (e *testEnv) server() string {
	// The address is known before the server serves: the setting is
	// written before any request can read it.
	ts := httptest.NewUnstartedServer(e.srv)
	if e.srv.cfg.Portal.PublicURL == "http://hookline.test" {
		e.srv.cfg.Portal.PublicURL = "http://" + ts.Listener.Addr().String()
	}
	ts.Start()
	e.t.Cleanup(ts.Close)
	return ts.URL
}

// signIn creates a user with the role and signs in through the login form.
func (e *testEnv) signIn(base, email, role string) *browser {
	e.t.Helper()
	// bcrypt at the production cost takes over a second under -race; a
	// minimum-cost hash of the same password checks the same way.
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := db.New(e.pool).UserCreate(context.Background(), db.UserCreateParams{Email: email, PasswordHash: string(hash), Role: role}); err != nil {
		e.t.Fatal(err)
	}
	b := newBrowser(e.t, base)
	res, doc := b.get("/login")
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /login: %d", res.StatusCode)
	}
	token, _ := doc.Find(`input[name=login_token]`).Attr("value")
	res, _ = b.postForm("/login", url.Values{"login_token": {token}, "email": {email}, "password": {"correct horse battery"}})
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/" {
		e.t.Fatalf("sign in as %s: %d at %s", email, res.StatusCode, res.Request.URL)
	}
	return b
}

// exec runs a setup statement, failing the test if it fails.
func (e *testEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{Jar: jar}}
}

// get fetches a page and parses it; it remembers the page's CSRF token.
func (b *browser) get(path string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	res, err := b.client.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.parse(res)
}

func (b *browser) parse(res *http.Response) (*http.Response, *goquery.Document) {
	b.t.Helper()
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		b.t.Fatal(err)
	}
	if tok, ok := doc.Find(`meta[name=csrf-token]`).Attr("content"); ok && tok != "" {
		b.csrf = tok
	}
	return res, doc
}

// postForm posts a form (adding the CSRF token unless the values carry one).
func (b *browser) postForm(path string, v url.Values) (*http.Response, *goquery.Document) {
	b.t.Helper()
	if _, ok := v["csrf_token"]; !ok && b.csrf != "" {
		v.Set("csrf_token", b.csrf)
	}
	res, err := b.client.PostForm(b.base+path, v)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.parse(res)
}

// htmx posts like htmx does: the token in a header, HX-Request set.
func (b *browser) htmx(method, path string, v url.Values) (*http.Response, *goquery.Document) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", b.csrf)
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.parse(res)
}

func testid(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}
