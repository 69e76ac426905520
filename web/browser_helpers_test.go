package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/latency"
	"github.com/hookline/hookline/worker/ssrf"
)

// The browser tests drive the dashboard in headless Chromium against a test
// server on a fresh database, the way an operator would: signing in through
// the login form, clicking, typing, waiting for htmx swaps. Every page they
// visit is saved as a full-page PNG in the artifacts directory, so a failure
// (or a layout regression) can be looked at.

const (
	// dashPassword is every browser test user's password.
	dashPassword = "correct horse battery"
	// stepTimeout bounds one browser step (a click, a navigation, a read);
	// waits on a condition say their own.
	stepTimeout = 15 * time.Second
)

// chromiumPath finds the browser. Without one the test fails in CI, where
// the browser tests must run, and is skipped elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("/usr/bin/chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required in CI: install it (apt-get install chromium) so that chromium is on PATH")
	}
	t.Skip("no Chromium (chromium on PATH or /usr/bin/chromium): browser tests skipped")
	return ""
}

// artifactsDir is $HOOKLINE_ARTIFACTS, or test-artifacts/ at the repository
// root (git-ignored).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HOOKLINE_ARTIFACTS")
	if dir == "" {
		root, err := filepath.Abs("..") // go test runs this package in web/
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chromeTab is one tab of a headless Chromium of its own, on one test
// server. Its methods fail the test (with a screenshot of the page) when a
// step fails or a condition is not met in time.
type chromeTab struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
	log  *pageLog
}

// pageLog is what the page did that no step asked for.
type pageLog struct {
	mu         sync.Mutex
	dialogs    []string // JavaScript dialogs nobody expected (answered "cancel")
	exceptions []string // uncaught JavaScript exceptions: each fails the test
	problems   []string // console errors, shown when the test fails
}

// with is the tab for a subtest: failures are the subtest's.
func (c *chromeTab) with(t *testing.T) *chromeTab {
	sub := *c
	sub.t = t
	return &sub
}

// sharedChromium is the one headless Chromium of this test binary, started
// by the first browser test and stopped by TestMain after the last. Each
// test gets a browser context of its own in it (as an incognito window:
// its own cookies, storage and cache), so tests stay as isolated as with a
// browser each, without paying a browser start per test.
var sharedChromium struct {
	mu     sync.Mutex
	ctx    context.Context // the browser's first tab; children open tabs in it
	stop   func()
	tmp    string
	broken error
}

// chromium returns the shared browser, starting it on first use.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	b := &sharedChromium
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken != nil {
		t.Fatalf("Chromium (%s) did not start: %v", path, b.broken)
	}
	if b.ctx != nil {
		return b.ctx
	}
	profile, err := os.MkdirTemp("", "chromium-profile")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium keeps its singleton socket in a directory it makes in
	// $TMPDIR and removes only when it exits by itself; it is ended with a
	// kill, which left one directory in /tmp a browser. A short one of its
	// own (a socket's path is limited to 108 bytes) is removed after it
	// exits.
	tmp, err := os.MkdirTemp("", "chromium")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Only loopback traffic: no proxy, whatever the environment says.
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop := func() {
		cancelBrowser()
		cancelAlloc() // waits for the process to exit
		_ = os.RemoveAll(profile)
		_ = os.RemoveAll(tmp)
	}
	// The first action starts the browser; it must not run under a timeout
	// that would end the browser with it, so the deadline comes from a
	// timer instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("no answer within 30 s")
	}
	if err != nil {
		stop()
		b.broken = err
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	b.ctx, b.stop = ctx, stop
	return ctx
}

// stopChromium ends the shared browser, if a test started it.
func stopChromium() {
	b := &sharedChromium
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop != nil {
		b.stop()
		b.ctx, b.stop = nil, nil
	}
}

// newChromeTab opens a tab in a fresh browser context of the shared
// Chromium for the test; both are closed when the test ends.
func newChromeTab(t *testing.T, base string) *chromeTab {
	t.Helper()
	browser := chromium(t)
	dir := artifactsDir(t)
	ctx, cancelTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	context.AfterFunc(t.Context(), cancelTab) // the tab's listeners end with the test
	c := &chromeTab{t: t, ctx: ctx, base: base, dir: dir, log: &pageLog{}}
	_ = os.Remove(filepath.Join(dir, c.failureShot())) // from an earlier run
	open, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Opening the tab under a timeout would tie the tab to it, so the
	// deadline comes from a goroutine instead.
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(ctx) }()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open a Chromium tab: %v", err)
		}
	case <-open.Done():
		t.Fatalf("Chromium did not open a tab within 30 s")
	}

	// A dialog nobody expected would block the page until the test times
	// out: answer it and report it instead. Expected ones are avoided by
	// replacing window.confirm (acceptConfirms).
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			c.log.note(&c.log.dialogs, string(ev.Type)+": "+ev.Message)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			line := fmt.Sprintf("%s:%d %s", strings.TrimPrefix(m.URL, base), m.Line+1, m)
			switch {
			case m.IsException():
				c.log.note(&c.log.exceptions, line)
			case m.Type == chromedp.ConsoleError:
				// Mostly the 4xx answers the tests provoke on purpose.
				c.log.note(&c.log.problems, line)
			}
		}
	}()
	t.Cleanup(func() {
		l := c.log
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, d := range l.dialogs {
			t.Errorf("unexpected JavaScript dialog: %s", d)
		}
		for _, p := range l.exceptions {
			t.Errorf("uncaught JavaScript exception: %s", p)
		}
		if t.Failed() {
			for _, p := range l.problems {
				t.Logf("browser console: %s", p)
			}
		}
	})
	return c
}

// consoleErrors returns the console errors logged so far that contain
// substr.
func (c *chromeTab) consoleErrors(substr string) []string {
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	var out []string
	for _, p := range c.log.problems {
		if strings.Contains(p, substr) {
			out = append(out, p)
		}
	}
	return out
}

func (l *pageLog) note(list *[]string, s string) {
	l.mu.Lock()
	*list = append(*list, s)
	l.mu.Unlock()
}

func (c *chromeTab) failureShot() string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(c.t.Name()) + "-failure.png"
}

// fatalf saves a screenshot of the page as it is, logs where the browser
// is and what the page says, and fails the test.
func (c *chromeTab) fatalf(format string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	name := c.failureShot()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(c.dir, name), png, 0o644)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if len(text) > 2000 {
		text = text[:2000] + "…"
	}
	c.t.Fatalf("%s\n  at %s (screenshot %s)\n  page text: %s", fmt.Sprintf(format, args...), loc, filepath.Join(c.dir, name), text)
}

// do runs browser steps with a deadline.
func (c *chromeTab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.fatalf("%s: %v", what, err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// evalJS evaluates an expression in the page (awaiting it if it is a
// promise) and decodes its value.
func evalJS[T any](c *chromeTab, expr string) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		c.fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// open navigates to a dashboard path and waits for the page to load.
func (c *chromeTab) open(path string) {
	c.t.Helper()
	c.do("open "+path, chromedp.Navigate(c.base+path))
}

// waitUntil polls a JavaScript condition until it is true of a document
// that has finished loading. It survives navigations (the condition is
// evaluated afresh each time), so it can wait for a page that a click or a
// script is loading; a page still being parsed, whose first rows are in
// and the rest not yet, never satisfies it.
func (c *chromeTab) waitUntil(what, cond string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { try { return document.readyState === "complete" && !!(`+cond+`); } catch (e) { return false; } })()`))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				c.fatalf("waiting %s for %s (%s): last error %v", timeout, what, cond, lastErr)
			}
			c.fatalf("waiting %s for %s (%s)", timeout, what, cond)
		}
		if c.ctx.Err() != nil {
			c.t.Fatalf("browser gone while waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sel is the JavaScript expression of the first element matching a CSS
// selector.
func sel(css string) string { return "document.querySelector(" + jsString(css) + ")" }

// count returns how many elements match a CSS selector.
func (c *chromeTab) count(css string) int {
	c.t.Helper()
	return evalJS[int](c, "document.querySelectorAll("+jsString(css)+").length")
}

// text returns the trimmed text of the first element matching a selector,
// "" when none does.
func (c *chromeTab) text(css string) string {
	c.t.Helper()
	return evalJS[string](c, "("+sel(css)+"?.textContent ?? '').replace(/\\s+/g, ' ').trim()")
}

// attr returns an attribute of the first element matching a selector.
func (c *chromeTab) attr(css, name string) string {
	c.t.Helper()
	return evalJS[string](c, "("+sel(css)+"?.getAttribute("+jsString(name)+") ?? '')")
}

// click clicks the first element matching a selector (once it is visible).
func (c *chromeTab) click(css string) {
	c.t.Helper()
	c.do("click "+css, chromedp.Click(chromedp.CSS(css)))
}

// clickToLoad clicks something that loads a new document (a link, a plain
// form) and waits until the new document is complete and cond holds.
func (c *chromeTab) clickToLoad(css, cond string) {
	c.t.Helper()
	evalJS[chromedp.Void](c, "window.__hooklineOldDocument = true")
	c.click(css)
	c.waitUntil("the page after clicking "+css, `!window.__hooklineOldDocument && (`+cond+`)`, stepTimeout)
}

// clickToSwap clicks something that makes htmx replace the element
// matching target, and waits until a new one is in place and cond holds.
// (Waiting for cond alone could be fooled by the element being replaced.)
func (c *chromeTab) clickToSwap(css, target, cond string) {
	c.t.Helper()
	evalJS[chromedp.Void](c, sel(target)+".__hooklineOld = true")
	c.click(css)
	c.waitUntil("the new "+target+" after clicking "+css, sel(target)+" && !"+sel(target)+".__hooklineOld && ("+cond+")", stepTimeout)
}

// typeInto replaces a field's value by typing, so the page sees the input
// events a person's typing makes.
func (c *chromeTab) typeInto(css, value string) {
	c.t.Helper()
	// chromedp's SetValue cannot set "" (the empty argument arrives as
	// undefined), so the field is cleared here.
	evalJS[chromedp.Void](c, sel(css)+`.value = ""`)
	c.do("type into "+css, chromedp.SendKeys(chromedp.CSS(css), value))
}

// acceptConfirms makes window.confirm say yes (hx-confirm and onsubmit
// confirmations) until the next page load.
func (c *chromeTab) acceptConfirms() {
	c.t.Helper()
	evalJS[chromedp.Void](c, "window.confirm = () => true")
}

// fetchStatus sends a request from the page (same origin, its cookies) and
// returns the response status. headers and form may be nil.
func (c *chromeTab) fetchStatus(method, path string, headers, form map[string]string) int {
	c.t.Helper()
	h, _ := json.Marshal(orEmpty(headers))
	f, _ := json.Marshal(orEmpty(form))
	return evalJS[int](c, fmt.Sprintf(`fetch(%s, {method: %s, headers: %s, body: new URLSearchParams(%s), redirect: "manual"}).then(r => r.status)`,
		jsString(path), jsString(method), h, f))
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// csrfToken is the token the page carries for htmx requests.
func (c *chromeTab) csrfToken() string {
	c.t.Helper()
	tok := c.attr(`meta[name="csrf-token"]`, "content")
	if tok == "" {
		c.fatalf("the page has no CSRF token")
	}
	return tok
}

// screenshot saves the whole page as <name>.png in the artifacts
// directory, once the last swap has settled: no htmx request, swap or
// settle under way, and two frames painted since.
func (c *chromeTab) screenshot(name string) {
	c.t.Helper()
	c.waitUntil("the page to settle before screenshot "+name,
		"!"+sel(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added"), stepTimeout)
	evalJS[chromedp.Void](c, "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done())))")
	ctx, cancel := context.WithTimeout(c.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, name+".png"), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// login signs in through the login form and waits for the overview.
func (c *chromeTab) login(email string) {
	c.t.Helper()
	c.open("/login")
	c.waitUntil("the login form", sel("#email")+" && "+sel("[data-testid=login-submit]"), stepTimeout)
	c.do("fill in the login form",
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), dashPassword),
	)
	c.clickToLoad("[data-testid=login-submit]", `location.pathname === "/" && `+sel("[data-testid=nav]"))
	if got := c.text("[data-testid=user] .user-email"); got != email {
		c.fatalf("signed in as %q, want %q", got, email)
	}
}

// createDashUser adds a dashboard user (minimum-cost bcrypt: production cost
// takes over a second under -race and checks the same way).
func (e *testEnv) createDashUser(email, role string) {
	e.t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(dashPassword), bcrypt.MinCost)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := db.New(e.pool).UserCreate(context.Background(), db.UserCreateParams{Email: email, PasswordHash: string(hash), Role: role}); err != nil {
		e.t.Fatal(err)
	}
}

// startWorker runs a delivery worker on the env's database (allowed to
// reach loopback receivers) until the test ends.
func (e *testEnv) startWorker() *worker.Worker {
	e.t.Helper()
	w, err := worker.New(worker.Config{
		Pool:         e.pool,
		SecretKey:    testKey(1),
		Guard:        ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		PartnerGuard: e.srv.partnerGuard, // as the server's: a process builds one of each
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("worker: %v", err)
		}
	})
	return w
}

// postEvent posts one event through the API and returns its id.
func (e *testEnv) postEvent(typ string, payload map[string]any) string {
	e.t.Helper()
	rec := e.do(http.MethodPost, "/api/v1/events", map[string]any{"type": typ, "payload": payload})
	mustStatus(e.t, rec, http.StatusAccepted)
	return decodeBody[struct {
		ID string `json:"id"`
	}](e.t, rec).ID
}

// waitDB polls a SQL condition (one boolean column) until it is true.
func (e *testEnv) waitDB(what string, timeout time.Duration, query string, args ...any) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		err := e.pool.QueryRow(context.Background(), query, args...).Scan(&ok)
		if err != nil {
			e.t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hookReceiver is a loopback partner endpoint: it answers with a status
// the test can change, and records the webhook-id of every request.
type hookReceiver struct {
	*httptest.Server
	status atomic.Int32
	delay  time.Duration
	body   string
	mu     sync.Mutex
	got    []receivedHook
}

type receivedHook struct {
	WebhookID string
	Status    int
	Path      string
	Query     string
	Header    http.Header
	Body      []byte
}

func newHookReceiver(t *testing.T, status int, delay time.Duration, body string) *hookReceiver {
	r := &hookReceiver{delay: delay, body: body}
	r.status.Store(int32(status))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		code := int(r.status.Load())
		r.mu.Lock()
		r.got = append(r.got, receivedHook{WebhookID: req.Header.Get("webhook-id"), Status: code, Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: b})
		r.mu.Unlock()
		if r.delay > 0 {
			time.Sleep(r.delay)
		}
		w.WriteHeader(code)
		io.WriteString(w, r.body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) requests() []receivedHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedHook(nil), r.got...)
}

// backfillLatency stores the past 23 hours of an endpoint's latency the way
// the worker's flush stores it (15-minute and hourly histograms with their
// quantiles), so that the worker's refresh computes real 24 h sparklines
// and percentiles. Durations are log-normal around median; failRate of the
// attempts fail.
func backfillLatency(t *testing.T, pool *pgxpool.Pool, endpointID int64, median time.Duration, failRate float64, seed uint64) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 7))
	now := time.Now().UTC()
	current := now.Truncate(15 * time.Minute)
	slots := map[time.Time]*latency.Histogram{}
	hours := map[time.Time]*latency.Histogram{}
	for k := 1; k <= 92; k++ {
		start := current.Add(-time.Duration(k) * 15 * time.Minute)
		h := &latency.Histogram{}
		// A daily wave, so the lines have a shape.
		wave := 1 + 0.6*math.Sin(float64(k)/9)
		for range 24 {
			d := time.Duration(float64(median) * wave * math.Exp(0.35*rnd.NormFloat64()))
			h.Observe(d, rnd.Float64() >= failRate)
		}
		slots[start] = h
		hour := start.Truncate(time.Hour)
		if hours[hour] == nil {
			hours[hour] = &latency.Histogram{}
		}
		hours[hour].Merge(h)
	}
	var ensure db.LatencySlotsEnsureParams
	var write db.LatencySlotsWriteParams
	add := func(res int32, start time.Time, h *latency.Histogram) {
		enc, err := h.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		ensure.EndpointIds, ensure.Resolutions, ensure.BucketStarts = append(ensure.EndpointIds, endpointID), append(ensure.Resolutions, res), append(ensure.BucketStarts, start)
		write.EndpointIds, write.Resolutions, write.BucketStarts = append(write.EndpointIds, endpointID), append(write.Resolutions, res), append(write.BucketStarts, start)
		write.Counts, write.OkCounts, write.FailCounts = append(write.Counts, h.Count()), append(write.OkCounts, h.OK()), append(write.FailCounts, h.Fail())
		write.SumsMs = append(write.SumsMs, msOf(h.Sum()))
		write.P50sMs = append(write.P50sMs, msOf(h.Quantile(0.50)))
		write.P95sMs = append(write.P95sMs, msOf(h.Quantile(0.95)))
		write.P99sMs = append(write.P99sMs, msOf(h.Quantile(0.99)))
		write.Buckets = append(write.Buckets, enc)
	}
	for start, h := range slots {
		add(900, start, h)
	}
	for start, h := range hours {
		add(3600, start, h)
	}
	q := db.New(pool)
	ctx := context.Background()
	if err := q.LatencySlotsEnsure(ctx, ensure); err != nil {
		t.Fatal(err)
	}
	if err := q.LatencySlotsWrite(ctx, write); err != nil {
		t.Fatal(err)
	}
}
