// Package sso owns single sign-on through an OpenID Connect provider: the
// authorization-code flow with PKCE (S256) and a nonce, the checks an ID
// token must pass (signature, issuer, audience, expiry, nonce, a verified
// email in an allowed domain) and the mapping of a claim to a hookline
// role. It knows nothing of users or sessions: web turns an Identity into a
// signed-in user.
//
// The provider is discovered on first use, not at start, so hookline starts
// while its provider is briefly down; a failed discovery is tried again at
// the next sign-in.
package sso

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Roles a claim maps to (the same names as web/account's).
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// Config is a validated single sign-on configuration (web/app's
// LoadConfig checks every field by the environment variable that sets it).
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is HOOKLINE_PUBLIC_URL + /login/oidc/callback, the one
	// address registered at the provider.
	RedirectURL string
	// AllowedDomains are the email domains (lower case) let in; empty lets
	// in any verified email.
	AllowedDomains []string
	// RoleClaim names the claim whose values map to roles ("groups"); a
	// dotted name ("realm_access.roles") reaches into nested objects when
	// no top-level claim has the whole name.
	RoleClaim      string
	AdminValues    []string
	OperatorValues []string
	// DefaultRole is the role of an allowed user whose claim maps to no
	// role: viewer, or "" to refuse them.
	DefaultRole string
	// PasswordLogin keeps the password form on beside single sign-on.
	PasswordLogin bool
	// HTTPClient reaches the provider; one with a 10 s timeout when nil.
	HTTPClient *http.Client
	// Now is the clock ID tokens' expiry is checked against.
	Now func() time.Time
}

// Client runs the flow against one provider.
type Client struct {
	cfg  Config
	http *http.Client

	mu       sync.Mutex
	provider *oidc.Provider // nil until discovered
	scopes   []string
}

// New checks the configuration; it does not contact the provider.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("sso: issuer %q is not an http(s) URL", cfg.Issuer)
	}
	if cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("sso: ClientID and RedirectURL are required")
	}
	if cfg.DefaultRole != "" && cfg.DefaultRole != RoleViewer {
		return nil, fmt.Errorf("sso: default role %q: want viewer or none", cfg.DefaultRole)
	}
	if cfg.RoleClaim == "" {
		cfg.RoleClaim = "groups"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// No idle connections kept: sign-ins are rare, and a pooled
		// connection's goroutines would outlive the server that made it.
		hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true, TLSHandshakeTimeout: 5 * time.Second,
		}}
	}
	return &Client{cfg: cfg, http: hc}, nil
}

// ProviderName is what the sign-in button names: the issuer's host.
func (c *Client) ProviderName() string {
	u, _ := url.Parse(c.cfg.Issuer)
	return u.Host
}

// PasswordLogin reports whether the password form stays on.
func (c *Client) PasswordLogin() bool { return c.cfg.PasswordLogin }

// Issuer is the configured issuer, as users are linked by it.
func (c *Client) Issuer() string { return c.cfg.Issuer }

// ErrUnreachable: the provider could not be reached or answered nonsense
// (discovery or the code exchange).
var ErrUnreachable = errors.New("the sign-in provider cannot be reached")

// discover fetches the discovery document once; a failure is not kept, so
// the next sign-in tries again. The lock is held through the fetch (at most
// 10 s): sign-ins arriving meanwhile wait for it rather than each fetching.
func (c *Client) discover(ctx context.Context) (*oidc.Provider, []string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, c.scopes, nil
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, c.http), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, c.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: discovery at %s: %w", ErrUnreachable, c.cfg.Issuer, err)
	}
	var meta struct {
		Scopes []string `json:"scopes_supported"`
	}
	_ = p.Claims(&meta)
	scopes := []string{oidc.ScopeOpenID, "email", "profile"}
	// The role claim is asked for as a scope (Dex, Keycloak and Okta send
	// "groups" only then) when the provider lists it; one that does not
	// (Google) would refuse an unknown scope.
	if name := c.cfg.RoleClaim; slices.Contains(meta.Scopes, name) && !slices.Contains(scopes, name) {
		scopes = append(scopes, name)
	}
	c.provider, c.scopes = p, scopes
	return p, scopes, nil
}

func (c *Client) oauth2Config(p *oidc.Provider, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret,
		Endpoint: p.Endpoint(), RedirectURL: c.cfg.RedirectURL, Scopes: scopes,
	}
}

// Attempt is what a started sign-in must remember until its callback: kept
// in a signed and encrypted cookie, never shown.
type Attempt struct {
	State    string
	Nonce    string
	Verifier string
}

// NewAttempt draws a fresh state, nonce and PKCE verifier.
func NewAttempt() Attempt {
	return Attempt{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), Verifier: oauth2.GenerateVerifier()}
}

// AuthURL is the provider's authorization address for an attempt.
func (c *Client) AuthURL(ctx context.Context, a Attempt) (string, error) {
	p, scopes, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	return c.oauth2Config(p, scopes).AuthCodeURL(a.State, oidc.Nonce(a.Nonce), oauth2.S256ChallengeOption(a.Verifier)), nil
}
