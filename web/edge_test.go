package web

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// edgeServer serves env on a real loopback listener with the server the
// process runs (HTTPServer, LimitListener), counting the bytes the server
// reads off its connections.
type edgeServer struct {
	URL  string
	addr string
	read atomic.Int64
}

func (e *testEnv) edgeServer() *edgeServer {
	e.t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	es := &edgeServer{}
	ts.Config = e.srv.HTTPServer()
	ts.Listener = &countingListener{Listener: e.srv.LimitListener(ts.Listener), n: &es.read}
	ts.Start()
	e.t.Cleanup(ts.Close)
	es.URL, es.addr = ts.URL, ts.Listener.Addr().String()
	return es
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// endless is a body of size bytes of one repeated byte, made as it is read.
type endless struct {
	left int64
	b    byte
}

func (r *endless) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.left)
	for i := range p[:n] {
		p[i] = r.b
	}
	r.left -= n
	return int(n), nil
}

// TestEdgeHugeBodies: a 200 MB body sent by someone unknown is answered
// (413, 415 or 401) after the server has read at most its family's limit,
// and parsing it costs the process no memory to speak of. Today's main
// parsed form bodies of every route before authentication.
func TestEdgeHugeBodies(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.MaxBodyBytes = 256 << 10 })
	srv := env.edgeServer()
	const huge = 200 << 20
	cases := []struct {
		name, path, contentType, auth string
		declared                      bool // Content-Length announced
		want                          []int
		limit                         int64 // what the server may read of the body
	}{
		{"API declared", "/api/v1/events", "application/json", "", true, []int{413}, 0},
		{"API streamed without key", "/api/v1/events", "application/json", "", false, []int{401}, 0},
		{"API multipart without key", "/api/v1/events", "multipart/form-data; boundary=x", "", false, []int{415}, 0},
		{"API streamed with a key", "/api/v1/events/batch", "application/json", "Bearer " + env.key, false, []int{413}, 256 << 10},
		{"login form", "/login", "application/x-www-form-urlencoded", "", false, []int{413, 403}, 16 << 10},
		{"dashboard form without a session", "/partners", "application/x-www-form-urlencoded", "", false, []int{303, 401}, 0},
		{"portal form without a session", "/portal/endpoints/1/edit", "application/x-www-form-urlencoded", "", false, []int{403}, 0},
		{"portal sign-in", "/portal/signin", "application/x-www-form-urlencoded", "", false, []int{413, 403}, 16 << 10},
	}
	client := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := io.Reader(&endless{left: huge, b: 'a'})
			if !tc.declared {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.declared {
				req.ContentLength = huge
			}
			req.Header.Set("Content-Type", tc.contentType)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			readBefore := srv.read.Load()
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v (the server read %d bytes)", err, srv.read.Load()-readBefore)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			runtime.ReadMemStats(&after)
			ok := false
			for _, w := range tc.want {
				ok = ok || res.StatusCode == w
			}
			if !ok {
				t.Fatalf("status %d, want one of %v", res.StatusCode, tc.want)
			}
			// Headers, the limit, and what net/http reads past an answer
			// to keep the connection (up to 256 KiB discarded, through
			// its buffers: about 520 KiB measured) at most: a constant,
			// whatever the body's size.
			read := srv.read.Load() - readBefore
			if max := tc.limit + 640<<10; read > max {
				t.Fatalf("the server read %d bytes of a %d-byte body, want at most %d", read, int64(huge), max)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Fatalf("the process allocated %d MB for the request", grew>>20)
			}
		})
	}
	t.Run("a signed-in form past its limit is a 413, not a silent empty form", func(t *testing.T) {
		b := env.signIn(srv.URL, "big@hookline.test", "operator")
		res, _ := b.postForm("/partners", url.Values{"name": {strings.Repeat("x", 300<<10)}})
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
	})
}

// dripConn sends what with a pause between bytes and reports when the
// server closed the connection.
func dripConn(addr, what string, every time.Duration, deadline time.Time) (closedAfter time.Duration, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		// Whatever the server answers (a 408, say), the connection ends.
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	for i := 0; ; i++ {
		select {
		case <-closed:
			return time.Since(start), nil
		case <-time.After(every):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("still open after %s", time.Since(start).Round(time.Millisecond))
		}
		if i < len(what) {
			if _, err := c.Write([]byte{what[i]}); err != nil {
				<-closed
				return time.Since(start), nil
			}
		}
	}
}

// TestEdgeSlowClients: a few hundred connections that drip their headers
// or their body a byte at a time are each closed at their deadline, while
// a normal request is served meanwhile.
func TestEdgeSlowClients(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	env := newEnv(t, func(c *Config) {
		c.Limits = Limits{HeaderTimeout: time.Second, BodyTimeout: time.Second, MaxConnections: 1000}
		c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	})
	srv := env.edgeServer()
	headers := "POST /login HTTP/1.1\r\nHost: hookline.test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
	body := headers + "Content-Length: 1000\r\n\r\n" + strings.Repeat("a", 1000)
	const slow = 300
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, slow)
	for i := range slow {
		what := headers + strings.Repeat("X-Drip: y\r\n", 100)
		if i%2 == 1 {
			what = body
		}
		wg.Go(func() {
			took, err := dripConn(srv.addr, what, 100*time.Millisecond, deadline)
			if err == nil && took > 10*time.Second {
				err = fmt.Errorf("closed only after %s", took)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	// Meanwhile a normal request is served.
	served := false
	for !served && time.Now().Before(deadline) {
		res, err := http.Get(srv.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			served = res.StatusCode == http.StatusOK
		}
	}
	if !served {
		t.Error("no normal request was served while the slow connections were open")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestEdgeConnectionCap: at the cap, a new connection waits for one to
// close (it is not refused), and the log says the cap was reached.
func TestEdgeConnectionCap(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	env := newEnv(t, func(c *Config) {
		c.Limits = Limits{HeaderTimeout: 2 * time.Second, MaxConnections: 16}
		c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	})
	srv := env.edgeServer()
	var conns []net.Conn
	for range 16 {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A request line, so that each is accepted and held open.
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\n")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	res, err := (&http.Client{Timeout: 20 * time.Second}).Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatalf("the 17th connection was not served once the held ones timed out: %v", err)
	}
	res.Body.Close()
	// The held connections were closed by their header deadline first.
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
			// An answer (408) is fine; a read that times out is not.
			continue
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a held connection is still open past its header deadline")
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "connection limit reached") || !strings.Contains(logs.String(), "max_connections=16") {
		t.Fatalf("no log line about the cap:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestEdgeSignInThrottleRace: parallel wrong guesses are counted one by
// one before any password is checked, so at most a bucket's worth is
// evaluated, per account and per address. Today's main checked the
// throttle before bcrypt and charged it after, so all were evaluated.
func TestEdgeSignInThrottleRace(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	env.signIn(base, "victim@hookline.test", "admin")
	guess := func(email string, n int) (statuses map[int]int, evaluated int64) {
		res, err := http.Get(base + "/login")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := regexp.MustCompile(`name="login_token" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatal("no login token")
		}
		// Every guess carries the one page's cookie and token, as a script
		// would (a cookie jar would take the new token each answer sets).
		token, cookies := string(m[1]), res.Cookies()
		env.srv.throttle = newLoginThrottle()
		var mu sync.Mutex
		statuses = map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				who := email
				if who == "" {
					who = fmt.Sprintf("user%d@hookline.test", i)
				}
				form := url.Values{"login_token": {token}, "email": {who}, "password": {"wrong guess"}}
				req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for _, c := range cookies {
					req.AddCookie(c)
				}
				res, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				mu.Lock()
				statuses[res.StatusCode]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		return statuses, env.srv.throttle.evaluations.Load()
	}
	t.Run("50 parallel guesses for one account", func(t *testing.T) {
		statuses, evaluated := guess("victim@hookline.test", 50)
		if evaluated > int64(accountLimit.burst) || statuses[http.StatusUnauthorized] > accountLimit.burst {
			t.Fatalf("%d passwords evaluated (%v), want at most %d", evaluated, statuses, accountLimit.burst)
		}
		if statuses[http.StatusTooManyRequests] != 50-statuses[http.StatusUnauthorized] {
			t.Fatalf("answers %v: want the rest refused with 429", statuses)
		}
	})
	t.Run("50 parallel guesses from one address over many accounts", func(t *testing.T) {
		statuses, evaluated := guess("", 50)
		if evaluated > int64(ipLimit.burst) || statuses[http.StatusUnauthorized] > ipLimit.burst {
			t.Fatalf("%d passwords evaluated (%v), want at most %d", evaluated, statuses, ipLimit.burst)
		}
	})
	t.Run("a right password gives its attempt back", func(t *testing.T) {
		th := newLoginThrottle()
		now := time.Unix(1_800_000_000, 0)
		for range 20 {
			a, _ := th.take("ok@hookline.test", "192.0.2.1", now)
			if a == nil {
				t.Fatal("refused after right passwords")
			}
			a.GiveBack(now)
		}
		for range accountLimit.burst {
			if a, _ := th.take("ok@hookline.test", "192.0.2.1", now); a == nil {
				t.Fatal("refused before the burst was spent")
			}
		}
		if a, wait := th.take("ok@hookline.test", "192.0.2.1", now); a != nil || wait <= 0 || wait > accountLimit.every {
			t.Fatalf("after the burst: attempt %v, wait %s", a, wait)
		}
		if a, _ := th.take("ok@hookline.test", "192.0.2.1", now.Add(accountLimit.every)); a == nil {
			t.Fatal("no attempt after a refill period")
		}
	})
}

// TestEdgeSecurityHeaders: every answer carries the strict policy and
// its companions; HSTS and Secure cookies come with HTTPS (TLS, a proxy's
// X-Forwarded-Proto, or an https public URL), never over plain HTTP.
func TestEdgeSecurityHeaders(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	b := env.signIn(base, "ops@hookline.test", "operator")
	pid := env.createPartner("Acme")
	link := env.portalLink(pid)
	for _, path := range []string{"/login", "/", "/endpoints", "/no-such-page", "/api/v1/stats", "/healthz", "/static/js/hookline.js", link} {
		res, err := b.client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		for name, want := range map[string]string{
			"Content-Security-Policy": contentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", path, name, got, want)
			}
		}
		for _, d := range []string{"default-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "object-src 'none'"} {
			if !strings.Contains(h.Get("Content-Security-Policy"), d) || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") {
				t.Errorf("%s: policy %q lacks %q or allows inline", path, h.Get("Content-Security-Policy"), d)
			}
		}
		wantRef := "same-origin"
		if strings.HasPrefix(path, "/portal/signin") {
			wantRef = "no-referrer" // the link's token is in the URL
		}
		if got := h.Get("Referrer-Policy"); got != wantRef {
			t.Errorf("%s: Referrer-Policy %q, want %q", path, got, wantRef)
		}
		if h.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s: HSTS over plain HTTP", path)
		}
	}
	t.Run("behind a TLS proxy: HSTS and Secure cookies", func(t *testing.T) {
		for _, trust := range []bool{true, false} {
			env2 := newEnvWithPool(t, env.pool, func(c *Config) { c.TrustProxy = trust })
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/login", nil)
			req.Header.Set("X-Forwarded-Proto", "https")
			env2.srv.ServeHTTP(rec, req)
			if got := rec.Header().Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
				t.Errorf("trust proxy %v: HSTS %q", trust, got)
			}
			cookies := rec.Result().Cookies()
			if len(cookies) == 0 {
				t.Fatalf("trust proxy %v: no cookie", trust)
			}
			for _, c := range cookies {
				if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
					t.Errorf("trust proxy %v: cookie %s Secure=%v HttpOnly=%v SameSite=%v", trust, c.Name, c.Secure, c.HttpOnly, c.SameSite)
				}
			}
		}
	})
	t.Run("an https public URL makes cookies Secure", func(t *testing.T) {
		env2 := newEnvWithPool(t, env.pool, func(c *Config) { c.Portal.PublicURL = "https://hooks.test" })
		rec := httptest.NewRecorder()
		env2.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
		for _, c := range rec.Result().Cookies() {
			if !c.Secure {
				t.Errorf("cookie %s is not Secure", c.Name)
			}
		}
	})
}

// TestEdgeMetricsNotPublic: /metrics names endpoints and their breakers,
// so the public listener serves it only with the metrics token; health
// probes say nothing about endpoints.
func TestEdgeMetricsNotPublic(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(c *Config) { c.MetricsToken = "" })
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "acme-secret-hooks", "kind": "webhook", "url": "https://hooks.acme.invalid/in"})
	get := func(e *testEnv, path, auth string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		e.srv.ServeHTTP(rec, req)
		return rec
	}
	if rec := get(env, "/metrics", ""); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "hookline_") {
		t.Fatalf("anonymous /metrics without a token configured: %d", rec.Code)
	}
	withToken := newEnvWithPool(t, env.pool, func(c *Config) { c.MetricsToken = "a-long-metrics-token" })
	for _, auth := range []string{"", "Bearer wrong-token", "Basic a-long-metrics-token"} {
		if rec := get(withToken, "/metrics", auth); rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "acme") {
			t.Fatalf("/metrics with %q: %d", auth, rec.Code)
		}
	}
	if rec := get(withToken, "/metrics", "Bearer a-long-metrics-token"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "hookline_") {
		t.Fatalf("/metrics with the token: %d", rec.Code)
	}
	// The metrics listener's handler serves them to anyone who reaches it.
	rec := httptest.NewRecorder()
	env.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "hookline_") {
		t.Fatalf("metrics handler: %d", rec.Code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if rec := get(env, path, ""); rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "acme") {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
}

// TestEdgeFamilies: each request meets its family's body limit and write
// deadline.
func TestEdgeFamilies(t *testing.T) {
	t.Parallel()
	l := DefaultLimits()
	for _, tc := range []struct {
		method, path string
		want         family
		limit        int64
		write        time.Duration
	}{
		{http.MethodPost, "/api/v1/events", familyIngest, 256 << 10, 30 * time.Second},
		{http.MethodPost, "/api/v1/events/batch", familyIngest, 256 << 10, 30 * time.Second},
		{http.MethodPatch, "/api/v1/endpoints/1", familyAPI, 256 << 10, time.Minute},
		{http.MethodPost, "/login", familySignIn, 16 << 10, time.Minute},
		{http.MethodPost, "/login/code", familySignIn, 16 << 10, time.Minute},
		{http.MethodPost, "/portal/signin", familySignIn, 16 << 10, time.Minute},
		{http.MethodPost, "/partners", familyForm, 256 << 10, time.Minute},
		{http.MethodGet, "/endpoints", familyPage, 16 << 10, time.Minute},
		{http.MethodGet, "/audit/export.csv", familyExport, 16 << 10, 10 * time.Minute},
	} {
		f := familyOf(httptest.NewRequest(tc.method, tc.path, nil))
		if f != tc.want || l.bodyLimit(f) != tc.limit || l.writeTimeout(f) != tc.write {
			t.Errorf("%s %s: %s, %d bytes, %s; want %s, %d, %s", tc.method, tc.path, f, l.bodyLimit(f), l.writeTimeout(f), tc.want, tc.limit, tc.write)
		}
	}
}
