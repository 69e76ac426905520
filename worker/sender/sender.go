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
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

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
}

// Options configures a Sender.
type Options struct {
	Guard               *ssrf.Guard // required
	UserAgent           string      // "hookline/<version>"; "hookline" when empty
	MaxIdleConnsPerHost int         // 0 means DefaultMaxIdleConnsPerHost
	Resolver            *net.Resolver
	Now                 func() time.Time // wall clock for Started and Retry-After dates
}

// Sender performs attempts over one shared keep-alive transport. It is
// safe for concurrent use.
type Sender struct {
	transport *http.Transport
	// roundTrip is the transport, called directly rather than through an
	// http.Client: the Client's redirect machinery is not wanted (a 3xx
	// is the answer, DESIGN §3), and skipping it saves a header copy and
	// several allocations per request. A redirect therefore cannot be
	// followed by construction, not merely by a CheckRedirect policy.
	roundTrip http.RoundTripper
	userAgent []string // shared, never modified: saves a slice per request
	now       func() time.Time
	attempts  sync.Pool // *attempt
}

// attempt is the per-request scratch space, pooled so that the hot path
// does not allocate a body buffer or a trace per request.
type attempt struct {
	buf    [MaxBodyRead]byte
	remote net.Addr
	// lastRemote and lastRemoteStr cache the string form of the last
	// connection's address: keep-alive makes the same connection (and the
	// same *net.TCPAddr) come back, and formatting it costs two
	// allocations.
	lastRemote    net.Addr
	lastRemoteStr string
	// trace is written once, when the attempt is created, and only read
	// afterwards: a dial abandoned by a timed-out request may still read
	// it from another goroutine after the attempt is back in the pool.
	trace httptrace.ClientTrace
}

func newAttempt() any {
	a := &attempt{}
	// GotConn runs on the goroutine calling RoundTrip, before it returns,
	// for both HTTP/1 and HTTP/2, so remote needs no lock.
	a.trace.GotConn = func(info httptrace.GotConnInfo) { a.remote = info.Conn.RemoteAddr() }
	return a
}

// New builds a Sender. Its transport dials through opts.Guard.Control, so
// every connection, including those to names resolved at send time, is
// checked on the address actually dialled.
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

	dialer := &net.Dialer{
		// The request context bounds every dial; this only stops a dial
		// started for the pool from outliving any sane endpoint timeout.
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   opts.Guard.Control,
		Resolver:  opts.Resolver,
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true) // negotiated by ALPN where the receiver offers it
	t := &http.Transport{
		// No proxy, deliberately not even from the environment: the
		// process would then dial the proxy, the guard would approve the
		// proxy's address, and the proxy would connect to whatever the URL
		// names, internal addresses included.
		Proxy:       nil,
		DialContext: dialer.DialContext,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
		},
		Protocols:           &protocols,
		TLSHandshakeTimeout: 10 * time.Second,
		// The worker's send pool bounds connections in use; this bounds
		// what thousands of quiet endpoints can keep idle.
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: perHost,
		IdleConnTimeout:     90 * time.Second,
		// Receivers are untrusted; their headers get a fixed budget too.
		MaxResponseHeaderBytes: 64 << 10,
		// Asking for gzip would make the 4 KiB cap and the body match
		// apply to decompressed bytes at the cost of CPU on the hot path;
		// trackers answer a few bytes, and the sender sends only what the
		// caller built.
		DisableCompression: true,
		HTTP2: &http.HTTP2Config{
			// Detect dead HTTP/2 connections instead of hanging requests
			// on them until the timeout.
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
	s := &Sender{
		transport: t,
		roundTrip: t,
		userAgent: []string{ua},
		now:       now,
	}
	s.attempts.New = newAttempt
	return s, nil
}

// Close closes idle keep-alive connections. Sends in progress finish
// normally; the Sender stays usable.
func (s *Sender) Close() {
	s.transport.CloseIdleConnections()
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
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()

	a := s.attempts.Get().(*attempt)
	defer s.attempts.Put(a)
	a.remote = nil
	if httptrace.ContextClientTrace(ctx) == nil {
		ctx = httptrace.WithClientTrace(ctx, &a.trace)
	} else {
		// WithClientTrace composes with a trace already in the context by
		// writing into ours, which the pooled copy must never see.
		t := a.trace
		ctx = httptrace.WithClientTrace(ctx, &t)
	}

	req, msg := s.newRequest(ctx, r)
	if req == nil {
		fail(res, Permanent, ClassInvalidRequest, msg)
		return
	}
	red := redactor{query: req.URL.RawQuery, values: r.Redact}
	if req.Host != req.URL.Host {
		red.host = req.Host
	}
	defer func() {
		res.Error = red.redact(res.Error)
		res.Excerpt = red.redact(res.Excerpt)
	}()

	resp, err := s.roundTrip.RoundTrip(req)
	if a.remote != nil {
		if a.remote != a.lastRemote {
			a.lastRemote, a.lastRemoteStr = a.remote, a.remote.String()
		}
		res.RemoteAddr = a.lastRemoteStr
	}
	if err != nil {
		classifyError(res, err, parent, ctx, timeout)
		return
	}
	res.StatusCode = resp.StatusCode

	n, readErr := io.ReadFull(resp.Body, a.buf[:])
	if readErr == io.EOF || readErr == io.ErrUnexpectedEOF {
		readErr = nil // a body shorter than the cap: the normal case
	}
	// Closing without draining drops the connection when the body was
	// longer than the cap; that is the price of never reading more.
	resp.Body.Close()
	body := a.buf[:n]
	res.Excerpt = excerpt(body)

	code := resp.StatusCode
	matched := r.SuccessBodyContains == "" || bytes.Contains(body, []byte(r.SuccessBodyContains))
	if !matched && readErr != nil && code >= 200 && code < 300 {
		// The match may have been in the part that never came.
		classifyError(res, readErr, parent, ctx, timeout)
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
		text = redirectMessage(resp)
	case ClassBodyMismatch:
		text += ": body does not contain the expected text"
	}
	fail(res, v.outcome, v.class, text)
	if v.retryAfter {
		res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.now())
	}
}

func fail(res *Result, o Outcome, class, msg string) {
	res.Outcome = o
	res.ErrorClass = class
	res.Error = msg
}

// newRequest builds the http.Request or explains, without echoing the URL,
// why it cannot be built.
func (s *Sender) newRequest(ctx context.Context, r Request) (*http.Request, string) {
	method := r.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, "unsupported method " + strconv.Quote(Truncate(method, 20))
	}
	var body io.Reader
	if len(r.Body) > 0 {
		// A *bytes.Reader is one net/http recognises as in memory: it
		// then writes headers and body in one go and can rewind the body
		// if a dead kept-alive connection forces a second try.
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return nil, "invalid URL" + urlErrorDetail(err)
	}
	switch {
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		if req.URL.Scheme == "" {
			return nil, "invalid URL: missing scheme"
		}
		return nil, "invalid URL: unsupported scheme " + strconv.Quote(Truncate(req.URL.Scheme, 20))
	case req.URL.Host == "":
		return nil, "invalid URL: missing host"
	case !validPort(req.URL.Port()):
		// url.Parse checks only that the port is digits.
		return nil, "invalid URL: port out of range"
	}

	h := r.Header
	var auth string
	if u := req.URL.User; u != nil && h.Get("Authorization") == "" {
		// http.Client turns URL credentials into Basic auth; Send calls
		// the transport directly, so it does the same here.
		pw, _ := u.Password()
		auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw))
	}
	if ua := h["User-Agent"]; len(ua) != 1 || ua[0] != s.userAgent[0] || auth != "" {
		// Copy rather than write into the caller's map, which may be
		// shared; callers that pre-set the same User-Agent skip this.
		h = make(http.Header, len(r.Header)+2)
		for k, v := range r.Header {
			h[k] = v
		}
		h["User-Agent"] = s.userAgent
		if auth != "" {
			h["Authorization"] = []string{auth}
		}
	}
	req.Header = h
	if host := h["Host"]; len(host) > 0 && host[0] != "" {
		if !httpguts.ValidHostHeader(host[0]) {
			return nil, "invalid Host header"
		}
		req.Host = host[0]
	}
	return req, ""
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
func redirectMessage(resp *http.Response) string {
	msg := statusText(resp.StatusCode) + ": redirect not followed"
	loc, err := resp.Location()
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
