package web

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/hookline/hookline/web/sso"
)

// The single sign-on tests sign in against mockoidc, an OpenID provider
// run in the test on 127.0.0.1: discovery, JWKS, the authorization-code
// flow with PKCE (it checks the verifier against the challenge) and nonce,
// ID tokens signed with its own RSA key. It signs in whichever user the
// test queued, without a login form.

// oidcProvider is a running mockoidc that can also tamper with the next
// ID token it issues (re-signed with its key), to test what hookline
// refuses.
type oidcProvider struct {
	*mockoidc.MockOIDC
	mu     sync.Mutex
	tamper func(jwt.MapClaims)
}

func newOIDCProvider(t *testing.T) *oidcProvider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &oidcProvider{MockOIDC: m}
	if err := m.AddMiddleware(p.tamperTokens); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

// queue makes the next sign-in at the provider that of this person.
func (p *oidcProvider) queue(sub, email string, verified bool, groups ...string) {
	p.QueueUser(&mockoidc.MockUser{Subject: sub, Email: email, EmailVerified: verified, Groups: groups})
}

// tamperNext changes the claims of the next ID token issued.
func (p *oidcProvider) tamperNext(f func(jwt.MapClaims)) {
	p.mu.Lock()
	p.tamper = f
	p.mu.Unlock()
}

func (p *oidcProvider) tamperTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		f := p.tamper
		p.mu.Unlock()
		if f == nil || r.URL.Path != mockoidc.TokenEndpoint {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil {
			if raw, ok := body["id_token"].(string); ok {
				claims := jwt.MapClaims{}
				p.tamperNext(nil) // this token is the one tampered with
				if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err == nil {
					f(claims)
					if signed, err := p.Keypair.SignJWT(claims); err == nil {
						body["id_token"] = signed
					}
				}
			}
		}
		out, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// newOIDCEnv is a test server whose single sign-on uses the provider:
// acme.test emails only; group hookline-admins is admin, oncall operator,
// everyone else viewer, unless mod changes it.
func newOIDCEnv(t *testing.T, p *oidcProvider, mod func(*sso.Config)) (*testEnv, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := &sso.Config{
		Issuer: p.Issuer(), ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		RedirectURL: base + "/login/oidc/callback", AllowedDomains: []string{"acme.test"},
		RoleClaim: "groups", AdminValues: []string{"hookline-admins"}, OperatorValues: []string{"oncall"},
		DefaultRole: sso.RoleViewer, PasswordLogin: true,
	}
	if mod != nil {
		mod(cfg)
	}
	env := newEnv(t, func(c *Config) { c.OIDC = cfg })
	ts := httptest.NewUnstartedServer(env.srv)
	_ = ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return env, base
}

// toCallback starts a sign-in and follows it to the provider and back to
// the callback address, which it returns without opening it.
func (b *browser) toCallback() *url.URL {
	b.t.Helper()
	client := *b.client
	client.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == "/login/oidc/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	res, err := client.Get(b.base + "/login/oidc")
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	loc, err := res.Location()
	if err != nil || loc.Path != "/login/oidc/callback" {
		b.t.Fatalf("sign-in start: %d, Location %v: %v", res.StatusCode, loc, err)
	}
	return loc
}

// cookieFor is the value of a cookie the browser would send to u.
func (b *browser) cookieFor(u *url.URL, name string) *http.Cookie {
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
