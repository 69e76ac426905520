package sender

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Authorizer sets a request's Authorization header from an endpoint's
// receiver credentials. Only this package implements it (Basic, OAuth2).
type Authorizer interface {
	// Kind is "basic" or "oauth2": what the event log and the endpoint
	// page show instead of the value.
	Kind() string
	// authorization is the header value for a request sent through c.
	authorization(ctx context.Context, c *client) (string, error)
	// refused is told that a 401 answered a request sent with value; it
	// reports whether sending again with a fresh value is worthwhile.
	refused(value string) bool
}

// Basic is HTTP basic authentication.
func Basic(user, password string) Authorizer {
	return basicAuth("Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

type basicAuth string

func (basicAuth) Kind() string { return "basic" }
func (a basicAuth) authorization(context.Context, *client) (string, error) {
	return string(a), nil
}
func (basicAuth) refused(string) bool { return false }

// tokenMargin is how long before its expiry a token is replaced, so that
// one is never sent in its last seconds (clocks differ, requests queue).
const tokenMargin = 30 * time.Second

// OAuth2 is the OAuth2 client-credentials grant (RFC 6749 §4.4), fetched
// with golang.org/x/oauth2/clientcredentials through the endpoint's own
// client: the same guard, proxy, CA and client certificate as its
// deliveries. The token is kept until shortly before it expires and shared
// by every send through this Authorizer; one send fetches while the others
// wait for it, so a burst costs one token, not one per delivery. A 401
// drops the token it answered once, and the delivery is sent again with a
// new one.
//
// Why not clientcredentials' own TokenSource: its cache cannot be told
// that a receiver refused a token before it expired.
func OAuth2(cfg clientcredentials.Config, now func() time.Time) Authorizer {
	if now == nil {
		now = time.Now
	}
	cfg.AuthStyle = oauth2.AuthStyleInParams
	if cfg.ClientSecret != "" {
		cfg.AuthStyle = oauth2.AuthStyleInHeader
	}
	return &oauth2Auth{cfg: cfg, now: now}
}

type oauth2Auth struct {
	cfg clientcredentials.Config
	now func() time.Time

	mu     sync.Mutex
	value  string // "Bearer ..." or ""
	expiry time.Time
}

func (*oauth2Auth) Kind() string { return "oauth2" }

func (a *oauth2Auth) authorization(ctx context.Context, c *client) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.value != "" && (a.expiry.IsZero() || a.now().Before(a.expiry.Add(-tokenMargin))) {
		return a.value, nil
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.httpClient())
	tok, err := a.cfg.Token(ctx)
	if err != nil {
		return "", &TokenError{Err: err}
	}
	a.value, a.expiry = "Bearer "+tok.AccessToken, tok.Expiry
	return a.value, nil
}

func (a *oauth2Auth) refused(value string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.value == value {
		a.value = "" // another send may have replaced it already
	}
	return true
}

// TokenError is a failure to get an OAuth2 token: the delivery was not
// sent.
type TokenError struct{ Err error }

func (e *TokenError) Error() string { return "oauth2 token endpoint: " + e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }

// message is the error's text as stored: the token endpoint's status and
// standard error code, or what went wrong reaching it; never the answer's
// body, which may echo the client secret.
func (e *TokenError) message() string {
	var re *oauth2.RetrieveError
	if errors.As(e.Err, &re) {
		msg := "oauth2 token endpoint: "
		if re.Response != nil {
			msg += statusText(re.Response.StatusCode)
		} else {
			msg += "refused"
		}
		if re.ErrorCode != "" {
			msg += " (" + sanitize(re.ErrorCode, 40) + ")"
		}
		return msg
	}
	var pe *ProxyError
	var dnsErr *net.DNSError
	switch {
	case errors.As(e.Err, &pe):
		return "oauth2 token endpoint: " + sanitize(pe.Error(), 120)
	case isTimeout(e.Err):
		return "oauth2 token endpoint: timeout"
	case errors.As(e.Err, &dnsErr):
		return "oauth2 token endpoint: " + dnsMessage(dnsErr)
	}
	return "oauth2 token endpoint: " + connectMessage(e.Err)
}

// httpClient is the client for the token endpoint (newHTTPClient).
func (c *client) httpClient() *http.Client { return c.hc }

// newHTTPClient is a net/http client that connects exactly as c's
// deliveries do, for the token endpoint.
func (c *client) newHTTPClient() *http.Client {
	dial := func(ctx context.Context, addr string, tlsOn bool) (net.Conn, error) {
		timeout := DefaultTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		if !tlsOn {
			return c.dial(addr, timeout, nil)
		}
		conf := c.tls.Clone()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		conf.ServerName = host
		return c.dial(addr, timeout, conf)
	}
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dial(ctx, addr, false)
			},
			DialTLSContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dial(ctx, addr, true)
			},
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       DefaultTimeout,
	}
}
