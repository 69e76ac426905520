// The delivery contract as this package speaks it: limits, outcomes,
// error classes, and the Request, Result and Options a caller deals in.

package sender

import (
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hookline/hookline/worker/ssrf"
)

// Limits from the delivery contract.
const (
	// MaxBodyRead is how much of a response body is ever read. Receivers
	// are untrusted: a huge or endless body must cost no more than this.
	MaxBodyRead = 4 << 10
	// MaxExcerpt bounds Result.Excerpt, which is stored with every attempt.
	MaxExcerpt = 1 << 10
	// MaxError bounds Result.Error.
	MaxError = 200
	// DefaultTimeout applies when Request.Timeout is not positive; it is the
	// endpoints' default timeout_ms.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxIdleConnsPerHost is the keep-alive pool per receiver host.
	DefaultMaxIdleConnsPerHost = 64
	// maxRetryAfter keeps a hostile Retry-After from overflowing a Duration;
	// the worker applies its own, lower cap (DESIGN §4: one hour).
	maxRetryAfter = 24 * time.Hour
)

// Outcome is what the attempt means for the delivery.
type Outcome string

const (
	OK        Outcome = "ok"        // delivered
	Transient Outcome = "transient" // retry with backoff
	Permanent Outcome = "permanent" // dead now
	Gone      Outcome = "gone"      // 410: dead, and the endpoint is disabled
)

// Error classes stored in Result.ErrorClass (and delivery_attempts).
const (
	ClassTimeout        = "timeout"
	ClassConnect        = "connect"
	ClassDNS            = "dns"
	ClassTLS            = "tls"
	ClassBlocked        = "blocked_destination"
	ClassHTTPStatus     = "http_status"
	ClassRedirect       = "redirect"
	ClassBodyMismatch   = "body_mismatch"
	ClassInvalidRequest = "invalid_request"
	ClassCanceled       = "canceled"
	// ClassProxy: the egress proxy refused to connect to the destination.
	ClassProxy = "proxy"
	// ClassToken: no OAuth2 token could be had for the request.
	ClassToken = "oauth2_token"
)

// Request is one attempt, fully built by the caller.
type Request struct {
	Method string // GET or POST; PUT, PATCH and DELETE are accepted too; "" means GET
	URL    string
	// Header is sent as is, except that User-Agent is always
	// Options.UserAgent (custom headers may not override it, DESIGN §3) and
	// a Host entry, which net/http would otherwise drop, sets the request's
	// Host. Send never modifies the map.
	Header  http.Header
	Body    []byte
	Timeout time.Duration // whole exchange, including reading the capped body
	// SuccessBodyContains, when set, must occur in the first MaxBodyRead
	// bytes of a 2xx body for the attempt to count as delivered
	// (case-sensitive: trackers answer 200 with "duplicate" or "error").
	SuccessBodyContains string
	// Redact lists further values kept out of Result.Error and Excerpt:
	// event values rendered into a postback URL's path, where the query's
	// redaction cannot see them.
	Redact []string
	// Egress, when set, is the endpoint's own way out (proxy, CA, client
	// certificate, credentials); nil goes out through the shared client.
	Egress *Egress
}

// Result describes one attempt. Error and Excerpt are safe to store, log
// and show: neither contains the URL's query, any of its values (postback
// click ids, transaction ids and payouts, which trackers echo back) or a
// custom Host header, and Error never quotes the request body.
type Result struct {
	Outcome    Outcome
	ErrorClass string        // "" when OK
	StatusCode int           // 0 when no response arrived
	Error      string        // short human message, at most MaxError bytes
	Excerpt    string        // start of the body: ≤ MaxExcerpt bytes of clean, redacted UTF-8
	RetryAfter time.Duration // Retry-After of a 429 or 503, 0 if absent or past
	Started    time.Time     // wall clock (Options.Now) at start
	Duration   time.Duration // monotonic
	RemoteAddr string        // ip:port actually connected to
	// RemoteClass is what kind of address RemoteAddr is (public, or opened
	// by the guard's allow list), so a caller can decide what to show of
	// the answer without resolving the host again: the partner portal
	// shows no response body from a non-public address.
	RemoteClass ssrf.Class
	// Proxy is the egress proxy the attempt went through (http://host:port),
	// "" when direct. RemoteAddr is then the destination's address the
	// proxy was asked to connect to.
	Proxy string
	// TLSVersion is the connection's TLS version (tls.VersionTLS13...), 0
	// for plain HTTP; TLSResumed that its handshake resumed a session.
	TLSVersion uint16
	TLSResumed bool
	// ClientCert is the subject of the client certificate offered to an
	// HTTPS receiver (Egress.Certificate), "" when none; Credential is the
	// kind of receiver credential sent (Authorizer.Kind: "basic",
	// "oauth2"), "" when none. Never a key or a value: both are stored
	// with the attempt and shown, to partners too.
	ClientCert string
	Credential string
}

// Options configures a Sender.
type Options struct {
	Guard     *ssrf.Guard // required
	UserAgent string      // "hookline/<version>"; "hookline" when empty
	// MaxIdleConnsPerHost bounds the connections, busy or idle, kept to
	// one receiver host; a send beyond it waits for one to come free (0
	// means DefaultMaxIdleConnsPerHost).
	MaxIdleConnsPerHost int
	Resolver            *net.Resolver
	Now                 func() time.Time // wall clock for Started and Retry-After dates
	// RootCAs are the roots receivers' certificates are checked against;
	// nil means the system's. Verification is always on.
	RootCAs *x509.CertPool
	// Proxy is the default egress proxy (HOOKLINE_EGRESS_PROXY), nil for
	// direct connections. Its address is allowed only as a proxy: the
	// guard judges each destination before the proxy is asked for it.
	Proxy *url.URL
	// Proxies are further proxies an endpoint may choose (Egress.Proxy)
	// whose addresses are, like Proxy's, not judged by the guard; any
	// other proxy an endpoint names must be a destination the guard
	// allows.
	Proxies []*url.URL
}
