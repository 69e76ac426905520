// Package sender owns the single HTTP attempt behind every delivery and
// every dashboard test fire. It connects only where the SSRF guard allows
// (checked at dial time, on the resolved address), never follows a
// redirect, reads at most 4 KiB of the answer, and classifies the attempt
// into the failure classes of the delivery contract. It knows nothing of
// queues, retries or the database: the worker decides what an Outcome means
// for the delivery, and this package only reports what happened.
package sender

// One HTTP attempt from dial to classified result: the connection as the
// Sender tracks it is in conn.go, the request built from a Request in
// build.go, classification in classify.go.

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hookline/hookline/worker/ssrf"
)

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
