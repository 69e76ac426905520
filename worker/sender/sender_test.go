package sender

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/valyala/fasthttp"

	"github.com/hookline/hookline/worker/ssrf"
)

// Every test talks to 127.0.0.1 only. Blocking is tested by refusing
// loopback itself, so no other address is ever dialled.

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func loopbackGuard() *ssrf.Guard {
	return ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func newTestSender(t testing.TB, opts Options) *Sender {
	t.Helper()
	if opts.Guard == nil {
		opts.Guard = loopbackGuard()
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "hookline/test"
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// countingServer starts a loopback server that counts requests reaching h.
func countingServer(t testing.TB, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"guard required", Options{}, "Guard is required"},
		{"negative pool", Options{Guard: loopbackGuard(), MaxIdleConnsPerHost: -1}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		s, err := New(Options{Guard: loopbackGuard()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.client.fc.MaxConnsPerHost != DefaultMaxIdleConnsPerHost || s.userAgent != "hookline" {
			t.Fatalf("defaults not applied: per host %d, user agent %q", s.client.fc.MaxConnsPerHost, s.userAgent)
		}
		if s.client.fc.Dial != nil || s.client.fc.ConfigureClient == nil || s.client.dialer.Control == nil {
			t.Fatal("every connection must be dialled by the guard's dialer")
		}
	})
}

func TestSendStatus(t *testing.T) {
	tests := []struct {
		name           string
		status         int
		header         map[string]string
		wantOutcome    Outcome
		wantClass      string
		wantError      string
		wantRetryAfter time.Duration
	}{
		{name: "200 ok", status: 200, wantOutcome: OK},
		{name: "204 no content", status: 204, wantOutcome: OK},
		{name: "301 redirect", status: 301, header: map[string]string{"Location": "https://hooks.example.com/in?cid=1"},
			wantOutcome: Permanent, wantClass: ClassRedirect,
			wantError: "HTTP 301 Moved Permanently: redirect not followed (to https://hooks.example.com/in)"},
		{name: "302 redirect", status: 302, header: map[string]string{"Location": "/elsewhere"},
			wantOutcome: Permanent, wantClass: ClassRedirect, wantError: "HTTP 302 Found: redirect not followed (to http://127.0.0.1:"},
		{name: "304 without location", status: 304, wantOutcome: Permanent, wantClass: ClassRedirect,
			wantError: "HTTP 304 Not Modified: redirect not followed"},
		{name: "400 bad request", status: 400, wantOutcome: Permanent, wantClass: ClassHTTPStatus, wantError: "HTTP 400 Bad Request"},
		{name: "401 unauthorized", status: 401, wantOutcome: Permanent, wantClass: ClassHTTPStatus, wantError: "HTTP 401 Unauthorized"},
		{name: "404 not found", status: 404, wantOutcome: Permanent, wantClass: ClassHTTPStatus, wantError: "HTTP 404 Not Found"},
		{name: "408 request timeout", status: 408, wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 408 Request Timeout"},
		{name: "410 gone", status: 410, wantOutcome: Gone, wantClass: ClassHTTPStatus, wantError: "HTTP 410 Gone"},
		{name: "418 other 4xx", status: 418, wantOutcome: Permanent, wantClass: ClassHTTPStatus, wantError: "HTTP 418 I'm a teapot"},
		{name: "425 too early", status: 425, wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 425 Too Early"},
		{name: "429 without retry-after", status: 429, wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 429 Too Many Requests"},
		{name: "429 retry-after seconds", status: 429, header: map[string]string{"Retry-After": "120"},
			wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 429 Too Many Requests", wantRetryAfter: 120 * time.Second},
		{name: "429 retry-after http date", status: 429, header: map[string]string{"Retry-After": testNow.Add(90 * time.Second).Format(http.TimeFormat)},
			wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 429 Too Many Requests", wantRetryAfter: 90 * time.Second},
		{name: "429 retry-after in the past", status: 429, header: map[string]string{"Retry-After": testNow.Add(-time.Hour).Format(http.TimeFormat)},
			wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 429 Too Many Requests"},
		{name: "500 internal server error", status: 500, wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 500 Internal Server Error"},
		{name: "500 retry-after ignored", status: 500, header: map[string]string{"Retry-After": "30"},
			wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 500 Internal Server Error"},
		{name: "503 retry-after seconds", status: 503, header: map[string]string{"Retry-After": "30"},
			wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 503 Service Unavailable", wantRetryAfter: 30 * time.Second},
		{name: "599 unregistered 5xx", status: 599, wantOutcome: Transient, wantClass: ClassHTTPStatus, wantError: "HTTP 599"},
		{name: "600 outside the registry", status: 600, wantOutcome: Permanent, wantClass: ClassHTTPStatus, wantError: "HTTP 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
			})
			s := newTestSender(t, Options{})
			res := s.Send(context.Background(), Request{Method: "GET", URL: srv.URL + "/hook", Timeout: 5 * time.Second})
			if res.Outcome != tc.wantOutcome || res.ErrorClass != tc.wantClass {
				t.Fatalf("outcome %q/%q (%s), want %q/%q", res.Outcome, res.ErrorClass, res.Error, tc.wantOutcome, tc.wantClass)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("StatusCode = %d, want %d", res.StatusCode, tc.status)
			}
			if !strings.HasPrefix(res.Error, tc.wantError) || (tc.wantError == "") != (res.Error == "") {
				t.Fatalf("Error = %q, want prefix %q", res.Error, tc.wantError)
			}
			if res.RetryAfter != tc.wantRetryAfter {
				t.Fatalf("RetryAfter = %v, want %v", res.RetryAfter, tc.wantRetryAfter)
			}
			if !res.Started.Equal(testNow) {
				t.Fatalf("Started = %v, want the injected clock %v", res.Started, testNow)
			}
			if res.Duration <= 0 {
				t.Fatalf("Duration = %v, want > 0", res.Duration)
			}
		})
	}
}

func TestSendBodyMatch(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		contains    string
		wantOutcome Outcome
		wantClass   string
	}{
		{"present", 200, `{"status":"ok","result":"SUCCESS"}`, "SUCCESS", OK, ""},
		{"absent", 200, "duplicate", "SUCCESS", Permanent, ClassBodyMismatch},
		{"case sensitive", 200, "success", "SUCCESS", Permanent, ClassBodyMismatch},
		{"empty body", 204, "", "SUCCESS", Permanent, ClassBodyMismatch},
		{"ends exactly at 4 KiB", 200, strings.Repeat("x", MaxBodyRead-7) + "SUCCESS", "SUCCESS", OK, ""},
		{"straddles 4 KiB", 200, strings.Repeat("x", MaxBodyRead-3) + "SUCCESS", "SUCCESS", Permanent, ClassBodyMismatch},
		{"beyond 4 KiB", 200, strings.Repeat("x", 5000) + "SUCCESS", "SUCCESS", Permanent, ClassBodyMismatch},
		{"not required", 200, "anything", "", OK, ""},
		{"ignored on 5xx", 503, "SUCCESS", "SUCCESS", Transient, ClassHTTPStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			s := newTestSender(t, Options{})
			res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second, SuccessBodyContains: tc.contains})
			if res.Outcome != tc.wantOutcome || res.ErrorClass != tc.wantClass {
				t.Fatalf("outcome %q/%q (%s), want %q/%q", res.Outcome, res.ErrorClass, res.Error, tc.wantOutcome, tc.wantClass)
			}
			if tc.wantClass == ClassBodyMismatch && !strings.Contains(res.Error, "does not contain the expected text") {
				t.Fatalf("Error = %q", res.Error)
			}
		})
	}
}

func TestSendHugeBodyReadsOnlyTheCap(t *testing.T) {
	// The body never ends: a sender that drained it would run into the
	// timeout instead of returning OK.
	chunk := []byte(strings.Repeat("0123456789abcdef", 2048))
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s := newTestSender(t, Options{})
	res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 10 * time.Second})
	if res.Outcome != OK {
		t.Fatalf("outcome %q/%q (%s), want ok", res.Outcome, res.ErrorClass, res.Error)
	}
	if len(res.Excerpt) != MaxExcerpt || !strings.HasPrefix(res.Excerpt, "0123456789abcdef") {
		t.Fatalf("excerpt has %d bytes, want %d", len(res.Excerpt), MaxExcerpt)
	}
}

// blockingServer's handler signals entered and then waits for the client to
// go away, so nothing depends on how long a sleep lasts.
func blockingServer(t *testing.T, writeHeaderFirst bool) (*httptest.Server, chan struct{}) {
	t.Helper()
	entered := make(chan struct{}, 16)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a client going away only once the request
		// body has been read.
		io.Copy(io.Discard, r.Body)
		if writeHeaderFirst {
			w.WriteHeader(200)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		entered <- struct{}{}
		<-r.Context().Done()
	})
	return srv, entered
}

func TestSendTimeout(t *testing.T) {
	t.Run("no response", func(t *testing.T) {
		srv, _ := blockingServer(t, false)
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 100 * time.Millisecond})
		if res.Outcome != Transient || res.ErrorClass != ClassTimeout || res.Error != "timeout after 100ms" {
			t.Fatalf("got %q/%q %q, want transient timeout", res.Outcome, res.ErrorClass, res.Error)
		}
		if res.Duration < 100*time.Millisecond {
			t.Fatalf("Duration %v is shorter than the timeout", res.Duration)
		}
		if res.StatusCode != 0 {
			t.Fatalf("StatusCode = %d, want 0", res.StatusCode)
		}
	})
	t.Run("body stalls after 2xx", func(t *testing.T) {
		srv, _ := blockingServer(t, true)
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 100 * time.Millisecond})
		if res.Outcome != OK || res.StatusCode != 200 || res.Excerpt != "partial" {
			t.Fatalf("got %q/%q %q excerpt %q, want ok: the 2xx already committed", res.Outcome, res.ErrorClass, res.Error, res.Excerpt)
		}
	})
	t.Run("body stalls before the expected text", func(t *testing.T) {
		srv, _ := blockingServer(t, true)
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 100 * time.Millisecond, SuccessBodyContains: "SUCCESS"})
		if res.Outcome != Transient || res.ErrorClass != ClassTimeout || res.StatusCode != 200 {
			t.Fatalf("got %q/%q %q status %d, want transient timeout", res.Outcome, res.ErrorClass, res.Error, res.StatusCode)
		}
	})
}

func TestSendCanceled(t *testing.T) {
	t.Run("during the request", func(t *testing.T) {
		srv, entered := blockingServer(t, false)
		s := newTestSender(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-entered
			cancel()
		}()
		res := s.Send(ctx, Request{URL: srv.URL, Timeout: 10 * time.Second})
		if res.Outcome != Transient || res.ErrorClass != ClassCanceled {
			t.Fatalf("got %q/%q %q, want transient canceled", res.Outcome, res.ErrorClass, res.Error)
		}
	})
	t.Run("before the request", func(t *testing.T) {
		srv, hits := countingServer(t, nil)
		s := newTestSender(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := s.Send(ctx, Request{URL: srv.URL, Timeout: 10 * time.Second})
		if res.Outcome != Transient || res.ErrorClass != ClassCanceled || hits.Load() != 0 {
			t.Fatalf("got %q/%q %q with %d hits, want transient canceled", res.Outcome, res.ErrorClass, res.Error, hits.Load())
		}
	})
}

func TestSendConnectionFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: "http://" + addr + "/", Timeout: 5 * time.Second})
		if res.Outcome != Transient || res.ErrorClass != ClassConnect || res.Error != "connection refused" {
			t.Fatalf("got %q/%q %q, want transient connect refused", res.Outcome, res.ErrorClass, res.Error)
		}
	})
	for _, tc := range []struct {
		name  string
		reset bool
	}{{"closed without response", false}, {"reset", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					return
				}
				if tc.reset {
					// Linger 0 turns the close into an RST.
					conn.(*net.TCPConn).SetLinger(0)
				}
				conn.Close()
			})
			s := newTestSender(t, Options{})
			res := s.Send(context.Background(), Request{Method: "POST", URL: srv.URL, Body: []byte("{}"), Timeout: 5 * time.Second})
			if res.Outcome != Transient || res.ErrorClass != ClassConnect {
				t.Fatalf("got %q/%q %q, want transient connect", res.Outcome, res.ErrorClass, res.Error)
			}
			if res.Error != "connection reset by peer" && res.Error != "connection closed before the response" {
				t.Fatalf("Error = %q", res.Error)
			}
		})
	}
}

func TestSendBlockedDestination(t *testing.T) {
	srv, hits := countingServer(t, nil)
	s := newTestSender(t, Options{Guard: ssrf.New(nil)})
	res := s.Send(context.Background(), Request{Method: "POST", URL: srv.URL + "/hook", Body: []byte("{}"), Timeout: 5 * time.Second})
	if res.Outcome != Permanent || res.ErrorClass != ClassBlocked {
		t.Fatalf("got %q/%q %q, want permanent blocked_destination", res.Outcome, res.ErrorClass, res.Error)
	}
	if res.Error != "blocked destination 127.0.0.1 (loopback): allowed only when HOOKLINE_ALLOW_NETWORKS includes it (e.g. 127.0.0.0/8)" {
		t.Fatalf("Error = %q", res.Error)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("handler reached %d times, want 0", n)
	}
	if res.RemoteAddr != "" || res.RemoteClass != ssrf.ClassNone {
		t.Fatalf("RemoteAddr = %q (%s), want none", res.RemoteAddr, res.RemoteClass)
	}
}

func TestSendRedirectNotFollowed(t *testing.T) {
	target, targetHits := countingServer(t, nil)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/landing?click_id=SECRET", http.StatusFound)
	})
	s := newTestSender(t, Options{})
	res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
	if res.Outcome != Permanent || res.ErrorClass != ClassRedirect || res.StatusCode != 302 {
		t.Fatalf("got %q/%q %d, want permanent redirect", res.Outcome, res.ErrorClass, res.StatusCode)
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("redirect target reached %d times, want 0", n)
	}
	if !strings.Contains(res.Error, target.URL+"/landing") || strings.Contains(res.Error, "SECRET") {
		t.Fatalf("Error = %q, want the target without its query", res.Error)
	}
}

// TestSendErrorNeverLeaksSecrets runs every failure path with a URL whose
// query carries postback values, a custom Host and a body, none of which
// may appear in Result.Error.
func TestSendErrorNeverLeaksSecrets(t *testing.T) {
	const query = "?cid=CLICK-7f3a9&payout=12.34&tx=TX-5521"
	secrets := []string{"CLICK-7f3a9", "12.34", "TX-5521", "vhost-secret", "BODY-SECRET"}

	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()

	status500, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	redirect, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
	// Trackers echo what they were sent; the excerpt must not keep it.
	mismatch, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "duplicate "+r.URL.RawQuery+" for "+r.Host+" cid CLICK-7f3a9, payout 12.34")
	})
	reset, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	slow, _ := blockingServer(t, false)
	dns := &fakeDNS{}

	tests := []struct {
		name     string
		guard    *ssrf.Guard
		url      string
		header   http.Header
		contains string
	}{
		{name: "5xx", url: status500.URL + "/pb" + query},
		{name: "redirect to itself", url: redirect.URL + "/pb" + query},
		{name: "body mismatch", url: mismatch.URL + "/pb" + query, contains: "BODY-SECRET"},
		{name: "timeout", url: slow.URL + "/pb" + query},
		{name: "refused", url: "http://" + refusedAddr + "/pb" + query},
		{name: "closed", url: reset.URL + "/pb" + query},
		{name: "blocked", guard: ssrf.New(nil), url: status500.URL + "/pb" + query},
		{name: "dns", url: "http://missing.test/pb" + query},
		{name: "bad port", url: "http://127.0.0.1:99999/pb" + query},
		{name: "bad host", url: "http://[::1/pb" + query},
		{name: "bad scheme", url: "ftp://127.0.0.1/pb" + query},
		{name: "bad header value", url: status500.URL + "/pb" + query, header: http.Header{"X-Token": {"CLICK-7f3a9\n"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSender(t, Options{Guard: tc.guard, Resolver: dns.resolver()})
			h := http.Header{"Host": {"vhost-secret.example"}}
			for k, v := range tc.header {
				h[k] = v
			}
			res := s.Send(context.Background(), Request{
				Method: "POST", URL: tc.url, Header: h, Body: []byte(`{"note":"BODY-SECRET"}`),
				Timeout: 200 * time.Millisecond, SuccessBodyContains: tc.contains,
			})
			if res.Outcome == OK || res.Error == "" {
				t.Fatalf("expected a failure, got %+v", res)
			}
			t.Logf("%s/%s: %s (excerpt %q)", res.Outcome, res.ErrorClass, res.Error, res.Excerpt)
			for _, s := range secrets {
				if strings.Contains(res.Error, s) {
					t.Fatalf("Error %q contains %q", res.Error, s)
				}
				if strings.Contains(res.Excerpt, s) {
					t.Fatalf("Excerpt %q contains %q", res.Excerpt, s)
				}
			}
			if len(res.Error) > MaxError || !utf8.ValidString(res.Error) {
				t.Fatalf("Error is not a short clean message: %q", res.Error)
			}
		})
	}
}

func TestSendInvalidRequest(t *testing.T) {
	srv, hits := countingServer(t, nil)
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		want   string
	}{
		{"empty url", "GET", "", nil, "invalid URL: missing scheme"},
		{"relative url", "GET", "/hook", nil, "invalid URL: missing scheme"},
		{"unsupported scheme", "GET", "ftp://127.0.0.1/x", nil, `unsupported scheme "ftp"`},
		{"missing host", "GET", "http:///x", nil, "invalid URL: missing host"},
		{"unparseable", "GET", "http://[::1/x", nil, "invalid URL: missing ']' in host"},
		{"port out of range", "GET", "http://127.0.0.1:99999/x", nil, "invalid URL: port out of range"},
		{"port zero", "GET", "http://127.0.0.1:0/x", nil, "invalid URL: port out of range"},
		{"unsupported method", "TRACE", srv.URL, nil, `unsupported method "TRACE"`},
		{"lower-case method", "post", srv.URL, nil, `unsupported method "post"`},
		{"invalid header value", "GET", srv.URL, http.Header{"X-A": {"a\r\nInjected: 1"}}, `invalid header field value for "X-A"`},
		{"invalid header name", "GET", srv.URL, http.Header{"Bad Name": {"1"}}, "invalid header field name"},
		{"invalid host header", "GET", srv.URL, http.Header{"Host": {"a b"}}, "invalid Host header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSender(t, Options{})
			res := s.Send(context.Background(), Request{Method: tc.method, URL: tc.url, Header: tc.header, Timeout: 5 * time.Second})
			if res.Outcome != Permanent || res.ErrorClass != ClassInvalidRequest {
				t.Fatalf("got %q/%q %q, want permanent invalid_request", res.Outcome, res.ErrorClass, res.Error)
			}
			if !strings.Contains(res.Error, tc.want) {
				t.Fatalf("Error = %q, want it to contain %q", res.Error, tc.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server reached %d times by invalid requests", n)
	}
}

func TestSendRequestShape(t *testing.T) {
	type seen struct {
		method, host, ua, ctype, body string
		length                        int64
	}
	got := make(chan seen, 1)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Host, r.UserAgent(), r.Header.Get("Content-Type"), string(b), r.ContentLength}
	})
	s := newTestSender(t, Options{UserAgent: "hookline/1.2.3"})

	t.Run("post keeps headers and body, enforces user agent", func(t *testing.T) {
		h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"partner-override"}}
		res := s.Send(context.Background(), Request{Method: "POST", URL: srv.URL, Header: h, Body: []byte(`{"a":1}`), Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("outcome %q: %s", res.Outcome, res.Error)
		}
		g := <-got
		want := seen{"POST", strings.TrimPrefix(srv.URL, "http://"), "hookline/1.2.3", "application/json", `{"a":1}`, 7}
		if g != want {
			t.Fatalf("server saw %+v, want %+v", g, want)
		}
		if h.Get("User-Agent") != "partner-override" || len(h) != 2 {
			t.Fatalf("caller's header map was modified: %v", h)
		}
	})
	t.Run("get without header or body", func(t *testing.T) {
		res := s.Send(context.Background(), Request{URL: srv.URL + "/pb?cid=1", Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("outcome %q: %s", res.Outcome, res.Error)
		}
		if g := <-got; g.method != "GET" || g.ua != "hookline/1.2.3" || g.body != "" {
			t.Fatalf("server saw %+v", g)
		}
	})
	t.Run("custom host header", func(t *testing.T) {
		h := http.Header{"Host": {"tracker.example"}, "User-Agent": {"hookline/1.2.3"}}
		res := s.Send(context.Background(), Request{URL: srv.URL, Header: h, Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("outcome %q: %s", res.Outcome, res.Error)
		}
		if g := <-got; g.host != "tracker.example" {
			t.Fatalf("server saw Host %q", g.host)
		}
	})
}

// connCountingServer answers "ok" and counts the connections it accepts.
func connCountingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestSendRemoteAddrAndReuse(t *testing.T) {
	srv, newConns := connCountingServer(t)

	s := newTestSender(t, Options{})
	const sends = 20
	for i := 0; i < sends; i++ {
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("send %d: %q %s", i, res.Outcome, res.Error)
		}
		if res.RemoteAddr != srv.Listener.Addr().String() {
			t.Fatalf("RemoteAddr = %q, want %q", res.RemoteAddr, srv.Listener.Addr())
		}
		// Loopback is reached only because the test guard allows it:
		// the class says so without another lookup.
		if res.RemoteClass != ssrf.ClassAllowListed {
			t.Fatalf("RemoteClass = %s, want allow-listed", res.RemoteClass)
		}
	}
	// A short body is read to EOF, so keep-alive connections go back to
	// the pool; the exact count depends on scheduling, so only demand
	// that reuse happened at all.
	if n := newConns.Load(); n >= sends {
		t.Fatalf("%d connections for %d sends: keep-alive is not reused", n, sends)
	}
}

func TestSendExcerptSanitised(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		io.WriteString(w, "bad\x00\x07\x1b[31m\u202eevil\r\nline2\xff\xfe\tend")
	})
	s := newTestSender(t, Options{})
	res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
	if want := "bad[31mevil\nline2\ufffd\tend"; res.Excerpt != want {
		t.Fatalf("Excerpt = %q, want %q", res.Excerpt, want)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"plain", "OK", "OK"},
		{"newline and tab kept", "a\n\tb", "a\n\tb"},
		{"carriage return dropped", "a\r\nb", "a\nb"},
		{"c0 and del dropped", "a\x01\x1f\x7fb", "ab"},
		{"c1 dropped", "a\u0085\u009bb", "ab"},
		{"bidi controls dropped", "a\u202e\u2066\u200fb", "ab"},
		{"bom and separators dropped", "\ufeffa\u2028b", "ab"},
		{"invalid run collapsed", "a\xff\xfe\xfdb", "a\ufffdb"},
		{"multibyte kept", "café ✓ 日本", "café ✓ 日本"},
		{"cut at the cap", strings.Repeat("a", 2000), strings.Repeat("a", MaxExcerpt)},
		{"rune not split at the cap", strings.Repeat("a", MaxExcerpt-1) + "é", strings.Repeat("a", MaxExcerpt-1)},
		{"rune cut by the read cap", "ab\xe6\x97", "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := excerpt([]byte(tc.in))
			if got != tc.want {
				t.Fatalf("excerpt(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("binary stays within the cap", func(t *testing.T) {
		b := make([]byte, MaxBodyRead)
		for i := range b {
			b[i] = byte(0x80 + i%2*0x40)
		}
		got := excerpt(b)
		if len(got) > MaxExcerpt || !utf8.ValidString(got) {
			t.Fatalf("excerpt of binary: %d bytes, valid %v", len(got), utf8.ValidString(got))
		}
	})
}

func TestRedact(t *testing.T) {
	red := redactor{query: "cid=ab%2Fcd&payout=12.50&status=1&tx=TX+9", host: "vhost.internal", values: []string{"clk-in-path"}}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"whole query", "GET /pb?cid=ab%2Fcd&payout=12.50&status=1&tx=TX+9", "GET /pb?…"},
		{"raw value", "cid ab%2Fcd seen", "cid … seen"},
		{"decoded value", "click ab/cd is a duplicate", "click … is a duplicate"},
		{"plus decoded as space", "transaction TX 9 exists", "transaction … exists"},
		{"payout", "payout 12.50 rejected", "payout … rejected"},
		{"short values kept", "status 1", "status 1"},
		{"host", "no route to vhost.internal", "no route to …"},
		{"caller's value", "duplicate click clk-in-path", "duplicate click …"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := red.redact(tc.in); got != tc.want {
				t.Fatalf("redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"absent", "", 0},
		{"zero", "0", 0},
		{"seconds", "120", 120 * time.Second},
		{"leading zeros", "007", 7 * time.Second},
		{"signed", "+5", 0},
		{"negative", "-5", 0},
		{"fraction", "1.5", 0},
		{"garbage", "soon", 0},
		{"http date", testNow.Add(10 * time.Minute).Format(http.TimeFormat), 10 * time.Minute},
		{"rfc 850 date", testNow.Add(time.Minute).Format(time.RFC850), time.Minute},
		{"asctime date", testNow.UTC().Add(time.Minute).Format(time.ANSIC), time.Minute},
		{"non-GMT zone", testNow.Add(time.Minute).In(time.FixedZone("PST", -8*3600)).Format("Mon, 02 Jan 2006 15:04:05 MST"), 0},
		{"ISO 8601", testNow.Add(time.Minute).UTC().Format(time.RFC3339), 0},
		{"date in the past", testNow.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"seconds capped", "604800", maxRetryAfter},
		{"overflow capped", "99999999999999999999999", maxRetryAfter},
		{"far date capped", testNow.AddDate(1, 0, 0).Format(http.TimeFormat), maxRetryAfter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRetryAfter(tc.in, testNow); got != tc.want {
				t.Fatalf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSendTLS(t *testing.T) {
	newTLSServer := func(t *testing.T) (*httptest.Server, chan int) {
		proto := make(chan int, 1)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proto <- r.ProtoMajor
			io.WriteString(w, "ok")
		}))
		srv.EnableHTTP2 = true
		srv.Config.ErrorLog = quietLog() // handshake failures are expected below
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv, proto
	}
	t.Run("http/1.1 where http2 is offered", func(t *testing.T) {
		srv, proto := newTLSServer(t)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		s := newTestSender(t, Options{RootCAs: pool})
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("outcome %q/%q: %s", res.Outcome, res.ErrorClass, res.Error)
		}
		if p := <-proto; p != 1 {
			t.Fatalf("request used HTTP/%d, want HTTP/1.1", p)
		}
		if res.RemoteAddr != srv.Listener.Addr().String() {
			t.Fatalf("RemoteAddr = %q over TLS", res.RemoteAddr)
		}
	})
	t.Run("unknown authority", func(t *testing.T) {
		srv, _ := newTLSServer(t)
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
		if res.Outcome != Permanent || res.ErrorClass != ClassTLS || !strings.Contains(res.Error, "unknown authority") {
			t.Fatalf("got %q/%q %q, want permanent tls", res.Outcome, res.ErrorClass, res.Error)
		}
	})
	t.Run("plain http behind https url", func(t *testing.T) {
		srv, _ := countingServer(t, nil)
		s := newTestSender(t, Options{})
		res := s.Send(context.Background(), Request{URL: strings.Replace(srv.URL, "http://", "https://", 1), Timeout: 5 * time.Second})
		if res.Outcome != Permanent || res.ErrorClass != ClassTLS {
			t.Fatalf("got %q/%q %q, want permanent tls", res.Outcome, res.ErrorClass, res.Error)
		}
	})
}

func TestSendResolvesAtDialTime(t *testing.T) {
	srv, hits := countingServer(t, nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns := &fakeDNS{a: map[string][4]byte{"hook.test.": {127, 0, 0, 1}}}

	tests := []struct {
		name        string
		guard       *ssrf.Guard
		dns         *fakeDNS
		host        string
		wantOutcome Outcome
		wantClass   string
		wantError   string
		wantHits    int64
	}{
		{"name resolving to allowed loopback", loopbackGuard(), dns, "hook.test", OK, "", "", 1},
		// The name says nothing; the resolved address is what is refused,
		// which is what defeats DNS rebinding.
		{"name resolving to refused loopback", ssrf.New(nil), dns, "hook.test", Permanent, ClassBlocked, "blocked destination 127.0.0.1 (loopback)", 0},
		{"no such host", loopbackGuard(), dns, "missing.test", Transient, ClassDNS, "dns: no such host missing.test", 0},
		{"server failure", loopbackGuard(), &fakeDNS{rcode: dnsmessage.RCodeServerFailure}, "hook.test", Transient, ClassDNS, "dns: ", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			s := newTestSender(t, Options{Guard: tc.guard, Resolver: tc.dns.resolver()})
			res := s.Send(context.Background(), Request{URL: "http://" + net.JoinHostPort(tc.host, port) + "/", Timeout: 5 * time.Second})
			if res.Outcome != tc.wantOutcome || res.ErrorClass != tc.wantClass || !strings.HasPrefix(res.Error, tc.wantError) {
				t.Fatalf("got %q/%q %q, want %q/%q %q", res.Outcome, res.ErrorClass, res.Error, tc.wantOutcome, tc.wantClass, tc.wantError)
			}
			if n := hits.Load(); n != tc.wantHits {
				t.Fatalf("server reached %d times, want %d", n, tc.wantHits)
			}
		})
	}
}

func TestSendDefaultTimeout(t *testing.T) {
	// A zero Timeout must mean the endpoints' default, never "no limit".
	var remaining time.Duration
	s := newTestSender(t, Options{})
	s.client.fc.ConfigureClient = func(hc *fasthttp.HostClient) error {
		hc.DialTimeout = func(_ string, timeout time.Duration) (net.Conn, error) {
			remaining = timeout
			return nil, errors.New("stop here")
		}
		return nil
	}
	s.Send(context.Background(), Request{URL: "http://127.0.0.1:1/"})
	if remaining <= DefaultTimeout-time.Second || remaining > DefaultTimeout {
		t.Fatalf("dial given %v, want about %v", remaining, DefaultTimeout)
	}
}

// fakeDNS answers the resolver's queries over an in-memory pipe, so no
// test ever sends a DNS packet anywhere.
type fakeDNS struct {
	a     map[string][4]byte // fully qualified name → A record
	rcode dnsmessage.RCode   // when set, every answer carries this code
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go f.serve(server)
			return client, nil
		},
	}
}

// serve speaks DNS over a stream (length-prefixed messages) until the
// resolver closes its end of the pipe.
func (f *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		resp, err := f.answer(msg)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

func (f *fakeDNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	addr, known := f.a[q.Name.String()]
	rcode := f.rcode
	if rcode == dnsmessage.RCodeSuccess && !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true, RCode: rcode,
	})
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if rcode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
		if err := b.AResource(rh, dnsmessage.AResource{A: addr}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

func TestSendStaleKeepAlive(t *testing.T) {
	// The receiver answers and then closes each kept-alive connection
	// while it sits idle in the pool (as servers with a short keep-alive
	// timeout do): the next send finds it dead before any answer and must
	// be sent again on a new connection, not fail, whatever its method.
	var conns, requests atomic.Int64
	closed := make(chan struct{}, 8)
	addr := tcpServer(t, func(c net.Conn) {
		conns.Add(1)
		buf := make([]byte, 4096)
		if n, err := c.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "\r\n\r\n") {
			return
		}
		requests.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		closed <- struct{}{}
	})
	s := newTestSender(t, Options{})
	url := "http://" + addr + "/hook"
	for i, method := range []string{"POST", "POST", "GET"} {
		res := s.Send(context.Background(), Request{Method: method, URL: url, Body: []byte("{}"), Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("send %d (%s): %q/%q %s", i, method, res.Outcome, res.ErrorClass, res.Error)
		}
		<-closed // the connection the answer came on, now in the pool, is closed
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("the receiver answered %d requests, want 3", n)
	}
	if n := conns.Load(); n < 3 {
		t.Fatalf("%d connections for 3 sends to a receiver that closes each", n)
	}
}

func TestSendCancelStopsOnlyItsHost(t *testing.T) {
	// Cancellation aborts the connections to the canceled request's
	// host; a send to another host is not disturbed, and the next send to
	// the same host goes out on a new connection.
	entered := make(chan struct{}, 1)
	var first atomic.Bool
	canceled, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if first.CompareAndSwap(false, true) {
			entered <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	})
	// The other host's second request is held until the cancel is over,
	// so it is in flight throughout.
	otherIn, held := make(chan struct{}, 1), make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	var otherN atomic.Int64
	slow, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if otherN.Add(1) == 2 {
			otherIn <- struct{}{}
			<-held
		}
		io.WriteString(w, "ok")
	})
	t.Cleanup(release) // runs before the server's cleanup, which waits for its handlers
	s := newTestSender(t, Options{})
	// A kept-alive connection to the host waits in the pool.
	if r := s.Send(context.Background(), Request{URL: slow.URL, Timeout: 5 * time.Second}); r.Outcome != OK {
		t.Fatalf("warm-up: %q/%q %q", r.Outcome, r.ErrorClass, r.Error)
	}
	other := make(chan Result, 1)
	go func() { other <- s.Send(context.Background(), Request{URL: slow.URL, Timeout: 5 * time.Second}) }()
	<-otherIn
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	start := time.Now()
	res := s.Send(ctx, Request{URL: canceled.URL, Timeout: 10 * time.Second})
	if res.Outcome != Transient || res.ErrorClass != ClassCanceled {
		t.Fatalf("canceled send: %q/%q %q", res.Outcome, res.ErrorClass, res.Error)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("canceled send returned after %v", d)
	}
	release()
	if r := <-other; r.Outcome != OK {
		t.Fatalf("send to another host: %q/%q %q", r.Outcome, r.ErrorClass, r.Error)
	}
	for _, url := range []string{canceled.URL, slow.URL} {
		if r := s.Send(context.Background(), Request{URL: url, Timeout: 5 * time.Second}); r.Outcome != OK {
			t.Fatalf("send to %s after the cancel: %q/%q %q", url, r.Outcome, r.ErrorClass, r.Error)
		}
	}
}

func TestSendResponseHeaderLimit(t *testing.T) {
	big := strings.Repeat("a", maxResponseHeader)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", big)
		io.WriteString(w, "ok")
	})
	s := newTestSender(t, Options{})
	res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second})
	if res.Outcome != Transient || res.ErrorClass != ClassConnect || res.Error != "response headers larger than 16 KiB" {
		t.Fatalf("got %q/%q %q", res.Outcome, res.ErrorClass, res.Error)
	}
}

func TestSendTimeoutKeepsRemoteAddr(t *testing.T) {
	srv, _ := blockingServer(t, false)
	s := newTestSender(t, Options{})
	res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 100 * time.Millisecond})
	if res.ErrorClass != ClassTimeout || res.RemoteAddr != srv.Listener.Addr().String() {
		t.Fatalf("got %q %q from %q, want a timeout from %s", res.ErrorClass, res.Error, res.RemoteAddr, srv.Listener.Addr())
	}
}

// cannedAnswer sends one request to a receiver that reads it and writes
// answer, byte for byte, then closes the connection.
func cannedAnswer(t *testing.T, answer string) Result {
	t.Helper()
	addr := tcpServer(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		io.WriteString(c, answer)
	})
	s := newTestSender(t, Options{})
	return s.Send(context.Background(), Request{URL: "http://" + addr + "/", Timeout: 5 * time.Second})
}

func TestSendInvalidResponse(t *testing.T) {
	res := cannedAnswer(t, "SSH-2.0-OpenSSH_9.6 secret-banner\r\n\r\n")
	if res.Outcome != Transient || res.ErrorClass != ClassConnect || res.Error != "invalid response headers" {
		t.Fatalf("got %q/%q %q", res.Outcome, res.ErrorClass, res.Error)
	}
}

func TestSendConnectionsEnd(t *testing.T) {
	// A connection older than its limit is closed after its next answer,
	// however busy: the next send dials (and resolves) again. Young
	// connections are kept alive.
	srv, newConns := connCountingServer(t)
	if maxConnDuration < time.Minute {
		t.Fatalf("maxConnDuration %v: connections would be redialled too often", maxConnDuration)
	}
	sendAll := func(s *Sender, k int, want int64) {
		t.Helper()
		for i := range k {
			if res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second}); res.Outcome != OK {
				t.Fatalf("send %d: %q %s", i, res.Outcome, res.Error)
			}
		}
		if n := newConns.Load(); n != want {
			t.Fatalf("%d connections, want %d", n, want)
		}
	}
	young := newTestSender(t, Options{})
	if young.client.fc.MaxConnDuration != maxConnDuration {
		t.Fatalf("connections live %v, want %v", young.client.fc.MaxConnDuration, maxConnDuration)
	}
	sendAll(young, 2, 1) // one connection, kept alive
	// A lifetime every connection has outlived by its first request: each
	// request goes out marked Connection: close, and the next dials anew.
	old := newTestSender(t, Options{})
	old.client.fc.MaxConnDuration = time.Nanosecond
	sendAll(old, 3, 4)
}

func TestSendSkipsInformationalAnswers(t *testing.T) {
	// A 1xx (here 103 Early Hints) precedes the answer; the answer counts.
	res := cannedAnswer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	if res.Outcome != OK || res.StatusCode != 200 || res.Excerpt != "ok" {
		t.Fatalf("got %q/%q %d %q", res.Outcome, res.ErrorClass, res.StatusCode, res.Error)
	}
}

func TestSendRequestLineExact(t *testing.T) {
	// Postback URLs are sent as stored: no path cleaning, no re-encoding
	// of the query, no fragment.
	got := make(chan string, 1)
	addr := tcpServer(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
		got <- line
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	s := newTestSender(t, Options{})
	for _, path := range []string{
		"/pb//a/../b/./c?cid=a%2Fb&sum=1+2&x=%zz&empty=&=v",
		"/p%20q/%E2%9C%93?q=%E2%9C%93",
		"/t;param?x=1",
	} {
		res := s.Send(context.Background(), Request{URL: "http://" + addr + path + "#frag", Timeout: 5 * time.Second})
		if res.Outcome != OK {
			t.Fatalf("%s: %q/%q %s", path, res.Outcome, res.ErrorClass, res.Error)
		}
		if line := <-got; line != "GET "+path+" HTTP/1.1" {
			t.Fatalf("request line %q, want %q", line, "GET "+path+" HTTP/1.1")
		}
	}
}
