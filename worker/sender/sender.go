// Package sender owns the single HTTP attempt behind every delivery and
// every dashboard test fire. It connects only where the SSRF guard allows
// (checked at dial time, on the resolved address), never follows a
// redirect, reads at most 4 KiB of the answer, and classifies the attempt
// into the failure classes of the delivery contract. It knows nothing of
// queues, retries or the database: the worker decides what an Outcome means
// for the delivery, and this package only reports what happened.
package sender

// Long file: one HTTP attempt from dial to classified result; classification itself is in classify.go.

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"

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

// Sender performs attempts over keep-alive connections shared by every
// send. It is safe for concurrent use.
//
// The HTTP client is fasthttp's rather than net/http's: a delivery is one
// small request and one small answer, and net/http's client hands every
// request to a connection's reader and writer goroutines and back, which
// cost 25–30 µs of CPU a delivery more than fasthttp's, where the calling
// goroutine writes and reads itself (worker/bench/performance.md, "The
// sender's HTTP client"). What that gives up: HTTP/2 (every receiver
// speaks HTTP/1.1) and cancellation by context, which Send rebuilds by
// aborting the connections to the request's host (abort).
type Sender struct {
	client    *client // for requests without Egress
	guard     *ssrf.Guard
	resolver  *net.Resolver
	roots     *x509.CertPool
	proxy     *url.URL
	proxies   []*url.URL
	perHost   int
	userAgent string
	now       func() time.Time
	attempts  sync.Pool // *attempt

	connMu sync.Mutex
	conns  map[*conn]struct{} // every open connection, for abort

	clients   sync.Map   // Egress.Key → *client
	clientsMu sync.Mutex // serialises building clients
}

// attempt is the per-request scratch space, pooled so that the hot path
// does not allocate a body buffer per request.
type attempt struct {
	buf [MaxBodyRead]byte
}

// conn is a dialled connection as the Sender tracks it. Once aborted
// (Sender.abort) its exchange in progress fails and so does any later one:
// every deadline set on it is in the past, and a write fails with
// errAborted before sending anything.
type conn struct {
	net.Conn
	addr   string // host:port as dialled
	s      *Sender
	remote *connAddr
	once   sync.Once

	mu      sync.Mutex // orders deadline changes with abort
	aborted bool
}

// errAborted is a write on an aborted connection: nothing of the request
// was sent, so it can go out on another connection.
var errAborted = errors.New("connection aborted")

// past is the deadline of an aborted connection.
var past = time.Unix(1, 0)

func (c *conn) Close() error {
	c.once.Do(func() {
		c.s.connMu.Lock()
		delete(c.s.conns, c)
		c.s.connMu.Unlock()
	})
	return c.Conn.Close()
}

func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (s *Sender) track(c *conn) {
	s.connMu.Lock()
	s.conns[c] = struct{}{}
	s.connMu.Unlock()
}

func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted = true
	c.Conn.SetDeadline(past)
}

func (c *conn) Write(b []byte) (int, error) {
	c.mu.Lock()
	aborted := c.aborted
	c.mu.Unlock()
	if aborted {
		return 0, errAborted
	}
	return c.Conn.Write(b)
}

func (c *conn) SetDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetDeadline)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetReadDeadline)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetWriteDeadline)
}

func (c *conn) setDeadline(t time.Time, set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		t = past
	}
	return set(t)
}

// maxConnDuration is how long a connection serves requests; the request
// that finds it older asks the receiver to close it after answering.
const maxConnDuration = 5 * time.Minute

// maxResponseHeader bounds a response's status line and headers: they are
// read into one buffer of this size, taken from a pool per request.
const maxResponseHeader = 16 << 10

// New builds a Sender. It dials through opts.Guard.Control, so every
// connection, including those to names resolved at send time, is checked
// on the address actually dialled.
func New(opts Options) (*Sender, error) {
	if opts.Guard == nil {
		return nil, errors.New("sender: Options.Guard is required")
	}
	if opts.MaxIdleConnsPerHost < 0 {
		return nil, fmt.Errorf("sender: MaxIdleConnsPerHost %d is negative", opts.MaxIdleConnsPerHost)
	}
	perHost := opts.MaxIdleConnsPerHost
	if perHost == 0 {
		perHost = DefaultMaxIdleConnsPerHost
	}
	ua := opts.UserAgent
	if ua == "" {
		ua = "hookline"
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Sender{
		guard: opts.Guard, resolver: opts.Resolver, roots: opts.RootCAs, proxy: opts.Proxy,
		userAgent: ua, now: now, perHost: perHost, conns: map[*conn]struct{}{},
	}
	if opts.Proxy != nil {
		s.proxies = append(s.proxies, opts.Proxy)
	}
	s.proxies = append(s.proxies, opts.Proxies...)
	s.attempts.New = func() any { return &attempt{} }
	var err error
	if s.client, err = s.newClient(nil); err != nil {
		return nil, err
	}
	return s, nil
}

// fasthttpClient is the fasthttp client every Sender client is: only
// how a host's connections are dialled (configure) differs.
func (s *Sender) fasthttpClient(configure func(*fasthttp.HostClient)) *fasthttp.Client {
	return &fasthttp.Client{
		// No proxy from the environment, deliberately: fasthttp reads
		// none, and the process would otherwise dial the proxy, the guard
		// would approve the proxy's address, and the proxy would connect
		// to whatever the URL names, internal addresses included. A proxy
		// is configured (Options.Proxy), and then the destination is
		// checked before the proxy is asked (client.dialProxy).
		// DialTimeout is set per host by configure, which knows whether
		// the host speaks TLS: the sender makes the handshake itself
		// (client.dial), so that it knows the version and whether the
		// session was resumed.
		//
		// TLS: at least 1.2, verified always, SNI from the URL's host;
		// HTTP/1.1 only (see Sender).
		MaxConnsPerHost:     s.perHost,
		MaxConnWaitTimeout:  time.Minute, // bounded sooner by each request's deadline
		MaxIdleConnDuration: 90 * time.Second,
		// A busy connection is never idle: without an end of its own it
		// would outlive a partner's DNS change (a failover, a move behind
		// another load balancer) for as long as deliveries keep it busy.
		// Each dial resolves the name again.
		MaxConnDuration: maxConnDuration,
		ReadBufferSize:  maxResponseHeader,
		// The body is read through a stream, MaxBodyRead at most: a huge
		// or endless body costs no more than that (and the connection).
		StreamResponseBody: true,
		// Asking for gzip would make the 4 KiB cap and the body match
		// apply to decompressed bytes at the cost of CPU on the hot path;
		// fasthttp never asks, and the sender sends only what the caller
		// built: no default Content-Type, User-Agent or path cleaning.
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		ConfigureClient: func(hc *fasthttp.HostClient) error {
			// Errors never quote what the receiver sent.
			hc.SecureErrorLogMessage = true
			configure(hc)
			return nil
		},
		// Send repeats what may be repeated (resendable), knowing whether
		// the send was canceled; fasthttp repeats nothing.
		MaxIdemponentCallAttempts: 1,
	}
}

// maxTries bounds how often one attempt's request goes out (resendable).
const maxTries = 3

// resendable is whether a request that failed with err on its try-th
// sending may go out again at once, on another connection: when nothing of
// it was sent (a connection aborted while it sat in the pool), or, on the
// first try only, when a kept-alive connection turned out closed by the
// receiver before any answer. net/http does the same for connections it
// finds closed while idle; nothing else is repeated here: retries are the
// worker's, with backoff.
func resendable(err error, try int) bool {
	if errors.Is(err, errAborted) {
		return true
	}
	return try == 1 && (errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// Close closes idle keep-alive connections. Sends in progress finish
// normally; the Sender stays usable.
func (s *Sender) Close() {
	s.client.fc.CloseIdleConnections()
	s.clients.Range(func(_, v any) bool {
		v.(*client).closeIdle()
		return true
	})
}

// abort makes every exchange on a connection to addr fail now (fasthttp
// has no cancellation by context) and closes the idle connections, so
// that none of those aborted comes back from the pool. Other sends to the
// same host on their own connections fail too, as timeouts; callers cancel
// when the whole worker stops or a dashboard request goes away, rarely
// both at once for one host.
func (s *Sender) abort(c *client, addr string) {
	s.connMu.Lock()
	for c := range s.conns {
		if c.addr == addr {
			c.abort()
		}
	}
	s.connMu.Unlock()
	c.fc.CloseIdleConnections()
}

// dialAddr is the address fasthttp dials for u, as its DialTimeout gets
// it: the host, lower-cased, and the port, the scheme's when u has none.
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Send performs one attempt and classifies it. It never returns an error:
// every failure is a Result with an Outcome and an ErrorClass.
func (s *Sender) Send(ctx context.Context, r Request) Result {
	start := time.Now() // monotonic reading for Duration
	res := Result{Started: s.now().Round(0)}
	s.send(ctx, r, &res)
	res.Duration = time.Since(start)
	if len(res.Error) > MaxError {
		res.Error = Truncate(res.Error, MaxError)
	}
	return res
}

func (s *Sender) send(parent context.Context, r Request, res *Result) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}

	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	u, msg := s.buildRequest(req, r)
	if u == nil {
		fail(res, Permanent, ClassInvalidRequest, msg)
		return
	}
	red := redactor{query: u.RawQuery, values: r.Redact}
	if host := req.Header.Host(); req.UseHostHeader && string(host) != u.Host {
		red.host = string(host)
	}
	defer func() {
		res.Error = red.redact(res.Error)
		res.Excerpt = red.redact(res.Excerpt)
	}()
	if parent.Err() != nil {
		classifyError(res, parent.Err(), parent, timeout)
		return
	}
	c := s.client
	if r.Egress != nil {
		var once bool
		var err error
		if c, once, err = s.clientFor(r.Egress); err != nil {
			fail(res, Permanent, ClassInvalidRequest, Truncate(err.Error(), MaxError))
			return
		}
		if once {
			defer c.closeIdle()
		}
		if c.cert != nil && u.Scheme == "https" {
			res.ClientCert = c.certSubject
		}
		if c.auth != nil {
			res.Credential = c.auth.Kind()
		}
		if c.cert != nil && s.now().After(c.cert.NotAfter) {
			fail(res, Permanent, ClassTLS, "tls: the client certificate expired on "+c.cert.NotAfter.UTC().Format(time.DateOnly))
			return
		}
	}
	if parent.Done() != nil {
		stop := context.AfterFunc(parent, func() { s.abort(c, dialAddr(u)) })
		defer stop()
	}
	// authorize sets the receiver credential's header (a cached token,
	// or a fresh one after a refusal) within the attempt's deadline.
	var auth string
	authorize := func() error {
		ctx, cancel := context.WithDeadline(parent, deadline)
		defer cancel()
		var err error
		if auth, err = c.auth.authorization(ctx, c); err == nil {
			req.Header.Set("Authorization", auth)
		}
		return err
	}
	if c.auth != nil {
		if err := authorize(); err != nil {
			classifyError(res, err, parent, timeout)
			return
		}
	}

	a := s.attempts.Get().(*attempt)
	defer s.attempts.Put(a)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)

	err := s.exchange(c, req, resp, deadline, parent)
	if err == nil && resp.StatusCode() == http.StatusUnauthorized && c.auth != nil && c.auth.refused(auth) {
		// The receiver refused the token (revoked, rotated, or its clock
		// ahead of ours): once, with a fresh one.
		resp.CloseBodyStream()
		resp.Reset()
		if err := authorize(); err != nil {
			classifyError(res, err, parent, timeout)
			return
		}
		err = s.exchange(c, req, resp, deadline, parent)
	}
	if ca, ok := resp.RemoteAddr().(*connAddr); ok {
		res.RemoteAddr, res.RemoteClass = ca.str, ca.class
		res.Proxy, res.TLSVersion, res.TLSResumed = ca.proxy, ca.tls, ca.resumed
		if err != nil {
			if tlsErr := ca.tlsErr.Load(); tlsErr != nil {
				err = *tlsErr
			}
		}
	} else if proxy := c.proxy; proxy != nil {
		res.Proxy = Redacted(proxy)
	}
	if err != nil {
		classifyError(res, err, parent, timeout)
		return
	}
	res.StatusCode = resp.StatusCode()

	var n int
	var readErr error
	if stream := resp.BodyStream(); stream != nil {
		n, readErr = io.ReadFull(stream, a.buf[:])
		if readErr == io.EOF || readErr == io.ErrUnexpectedEOF {
			readErr = nil // a body shorter than the cap: the normal case
		}
		// Closing before the end drops the connection when the body was
		// longer than the cap; that is the price of never reading more.
		resp.CloseBodyStream()
	} else {
		n = copy(a.buf[:], resp.Body())
	}
	body := a.buf[:n]
	res.Excerpt = excerpt(body)

	code := res.StatusCode
	matched := r.SuccessBodyContains == "" || bytes.Contains(body, []byte(r.SuccessBodyContains))
	if !matched && readErr != nil && code >= 200 && code < 300 {
		// The match may have been in the part that never came.
		classifyError(res, readErr, parent, timeout)
		return
	}
	// A 2xx status is the receiver's commitment; a body that then stalls
	// or breaks does not undo it, and retrying would only deliver twice.
	v := classify(code, matched)
	if v.outcome == OK {
		res.Outcome = OK
		return
	}
	text := statusText(code)
	switch v.class {
	case ClassRedirect:
		text = redirectMessage(code, u, resp.Header.Peek("Location"))
	case ClassBodyMismatch:
		text += ": body does not contain the expected text"
	}
	fail(res, v.outcome, v.class, text)
	if v.retryAfter {
		res.RetryAfter = parseRetryAfter(string(resp.Header.Peek("Retry-After")), s.now())
	}
}

// exchange sends req on c, again on another connection when that is safe
// (resendable).
func (s *Sender) exchange(c *client, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, parent context.Context) error {
	for try := 1; ; try++ {
		err := c.fc.DoDeadline(req, resp, deadline)
		if err == nil || parent.Err() != nil || try == maxTries || !resendable(err, try) {
			return err
		}
		resp.Reset()
	}
}

func fail(res *Result, o Outcome, class, msg string) {
	res.Outcome = o
	res.ErrorClass = class
	res.Error = msg
}

// buildRequest fills req from r and returns the parsed URL, or explains,
// without echoing the URL, why it cannot be built.
// The URL is checked with net/url, as everywhere else in hookline, and the
// request line is its RequestURI: what is stored is what is sent.
func (s *Sender) buildRequest(req *fasthttp.Request, r Request) (*url.URL, string) {
	method := r.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, "unsupported method " + strconv.Quote(Truncate(method, 20))
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, "invalid URL" + urlErrorDetail(err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return nil, "invalid URL: missing scheme"
		}
		return nil, "invalid URL: unsupported scheme " + strconv.Quote(Truncate(u.Scheme, 20))
	case u.Host == "" || u.Hostname() == "":
		return nil, "invalid URL: missing host"
	case !validPort(u.Port()):
		// url.Parse checks only that the port is digits.
		return nil, "invalid URL: port out of range"
	}
	req.Header.DisableNormalizing()
	req.Header.SetNoDefaultContentType(true)
	req.Header.SetMethod(method)
	uri := req.URI()
	uri.DisablePathNormalizing = true
	uri.SetScheme(u.Scheme)
	uri.SetHost(u.Host)
	uri.SetPath(u.EscapedPath())
	uri.SetQueryString(u.RawQuery)

	for k, vs := range r.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, "invalid header field name " + strconv.Quote(Truncate(k, 40))
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, "invalid header field value for " + strconv.Quote(Truncate(k, 40))
			}
		}
		switch http.CanonicalHeaderKey(k) {
		case "User-Agent", "Content-Length", "Connection", "Transfer-Encoding":
			// The User-Agent is always ours (DESIGN §3); the framing is
			// the client's.
			continue
		case "Host":
			if len(vs) > 0 && vs[0] != "" {
				if !httpguts.ValidHostHeader(vs[0]) {
					return nil, "invalid Host header"
				}
				req.UseHostHeader = true
				req.Header.SetHost(vs[0])
			}
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", s.userAgent)
	if user := u.User; user != nil && len(r.Header["Authorization"]) == 0 {
		// net/http's client turns URL credentials into Basic auth; so
		// does the sender.
		pw, _ := user.Password()
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+pw)))
	}
	if len(r.Body) > 0 {
		req.SetBodyRaw(r.Body)
	}
	return u, ""
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

// statusText renders "HTTP 503 Service Unavailable" from the registry, not
// from the receiver's reason phrase, which it controls.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return "HTTP " + strconv.Itoa(code) + " " + t
	}
	return "HTTP " + strconv.Itoa(code)
}

// redirectMessage names where the receiver redirects to (the commonest
// cause is http:// configured where https:// is served) without the target's
// query, which may carry the very values that must not be logged.
func redirectMessage(code int, base *url.URL, location []byte) string {
	msg := statusText(code) + ": redirect not followed"
	if len(location) == 0 {
		return msg
	}
	loc, err := base.Parse(string(location))
	if err != nil {
		return msg
	}
	target := loc.Scheme + "://" + loc.Host + loc.EscapedPath()
	return msg + " (to " + sanitize(target, 120) + ")"
}

// parseRetryAfter reads delta-seconds or an HTTP date relative to now.
// Anything unparseable or in the past means no hint.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	} else if errors.Is(err, strconv.ErrRange) {
		return maxRetryAfter
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d.Round(time.Second), maxRetryAfter)
}
