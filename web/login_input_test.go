package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// nextBypasses are values of ?next= that browsers would follow off the site
// (or that only look local): every one must become "/".
var nextBypasses = []string{
	"//other.host/", "///other.host/", "////other.host",
	"/\t/other.host/", "/%09/other.host/", "\t//other.host/", "/\n/other.host/", "/\r\n/other.host", "/%0a/other.host",
	"/\\other.host/", "\\/other.host/", "\\\\other.host", "/\\/other.host",
	"/%2F/other.host", "/%2F%2Fother.host", "%2F%2Fother.host", "/%2f%2fother.host", "/%252F%252Fother.host",
	"/%5Cother.host", "/%5C%5Cother.host",
	"https://other.host/", "https:other.host", "http:/other.host", "//user@other.host", "javascript:alert(1)", "JavaScript:alert(1)",
	"data:text/html,x", " /endpoints", "/ /other.host", "/\u00a0/other.host", "/\u2028/other.host", "/\x00/x", "/\x7f/x",
	"other.host", "", "/login", "/login?next=//other.host", "/x\xff",
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for _, next := range nextBypasses {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{"/", "/endpoints", "/endpoints?q=acme&show=slow", "/endpoints/12#health", "/dead-letters?hours=24",
		"/partners/3/edit", "/endpoints?q=a%20b", "/endpoints?q=%2F%2Fx", "/endpoints?q=é"} {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}

func TestLoginRedirectStaysOnSite(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	signedIn := env.signIn(base, "ops@example.com", "operator")
	noFollow := func(b *browser) *http.Client {
		c := *b.client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return &c
	}
	for _, next := range nextBypasses {
		t.Run("signed in "+url.QueryEscape(next), func(t *testing.T) {
			res, err := noFollow(signedIn).Get(base + "/login?next=" + url.QueryEscape(next))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			loc := res.Header.Get("Location")
			if res.StatusCode == http.StatusUnprocessableEntity && loc == "" {
				return // a NUL or a byte that is not UTF-8 is refused outright
			}
			if res.StatusCode != http.StatusSeeOther || loc != "/" {
				t.Fatalf("status %d, Location %q; want 303 to /", res.StatusCode, loc)
			}
		})
	}
	t.Run("signing in", func(t *testing.T) {
		for _, next := range []string{"/%09/other.host/", "/\\other.host", "https://other.host/", "/%2F%2Fother.host"} {
			b := newBrowser(t, base)
			_, doc := b.get("/login?next=" + url.QueryEscape(next))
			token, _ := doc.Find(`input[name=login_token]`).Attr("value")
			form := url.Values{"login_token": {token}, "email": {"ops@example.com"}, "password": {"correct horse battery"}, "next": {next}}
			res, err := noFollow(b).PostForm(base+"/login", form)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/" {
				t.Fatalf("next %q: status %d, Location %q; want 303 to /", next, res.StatusCode, loc)
			}
		}
	})
	t.Run("a local next is kept", func(t *testing.T) {
		res, err := noFollow(signedIn).Get(base + "/login?next=" + url.QueryEscape("/endpoints?q=acme"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); loc != "/endpoints?q=acme" {
			t.Fatalf("Location %q", loc)
		}
	})
}

func TestTruncateStringKeepsCharacters(t *testing.T) {
	t.Parallel()
	ua := strings.Repeat("a", 199) + "é" + "tail" // "é" spans bytes 199 and 200
	got := truncateString(ua, 200)
	if !utf8.ValidString(got) || got != strings.Repeat("a", 199) {
		t.Fatalf("truncateString = %q (%d bytes)", got, len(got))
	}
	for _, tc := range []struct{ in, want string }{
		{"ab", "ab"}, {"", ""}, {"日本語", "日"}, {"a\xffb\x00c", "abc"}, {"€€", "€"},
	} {
		n := 4
		if got := truncateString(tc.in, n); got != tc.want {
			t.Errorf("truncateString(%q, %d) = %q, want %q", tc.in, n, got, tc.want)
		}
	}
}

func TestLoginWithAMultibyteUserAgent(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	env.signIn(base, "ua@example.com", "viewer") // creates the user
	for _, ua := range []string{
		strings.Repeat("a", 199) + "é and more", // a two-byte character across the 200-byte cut
		strings.Repeat("a", 198) + "日本",         // three bytes across it
		"Mozilla/5.0 \xff\xfe broken",           // bytes that are not UTF-8
	} {
		b := newBrowser(t, base)
		b.client.Transport = uaTransport{ua}
		_, doc := b.get("/login")
		token, _ := doc.Find(`input[name=login_token]`).Attr("value")
		res, _ := b.postForm("/login", url.Values{"login_token": {token}, "email": {"ua@example.com"}, "password": {"correct horse battery"}})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/" {
			t.Fatalf("UA %q: sign in answered %d at %s", ua, res.StatusCode, res.Request.URL)
		}
	}
	var stored string
	if err := env.pool.QueryRow(context.Background(),
		"SELECT user_agent FROM user_sessions ORDER BY created_at DESC LIMIT 1").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(stored) {
		t.Fatalf("stored UA %q", stored)
	}
}

type uaTransport struct{ ua string }

func (u uaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", u.ua)
	return http.DefaultTransport.RoundTrip(r)
}
