package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/signing"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	// Below the kernel's ephemeral range (32768-60999 on Linux): a port
	// the kernel hands out for ":0" can be taken as the source port of
	// any outgoing connection before hookline binds it, which failed a
	// start with "address already in use"; ports below it are only ever
	// taken by a listener that asks for one.
	for range 200 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return ""
}

// serveEnv is the environment of a "hookline serve" on the database at
// url, with fixed keys, a free loopback address and its own data
// directory, allowed to deliver to loopback receivers.
func serveEnv(t *testing.T, url string) map[string]string {
	t.Helper()
	return map[string]string{
		"DATABASE_URL":            url,
		"HOOKLINE_SECRET_KEY":     "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
		"HOOKLINE_SESSION_KEY":    "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=",
		"HOOKLINE_ADDR":           freeAddr(t),
		"HOOKLINE_ALLOW_NETWORKS": "127.0.0.0/8",
		"HOOKLINE_DATA_DIR":       t.TempDir(),
	}
}

// waitUntil checks cond every 10 ms until it holds, and fails the test if
// it does not within d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type process struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	env    map[string]string
	addr   string
}

// start runs hookline's run() as the binary would, with the given
// environment, until stop.
func start(t *testing.T, env map[string]string, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// Several processes run side by side: none opens a metrics listener,
	// and metrics() scrapes the public one with the token.
	if _, ok := env["HOOKLINE_METRICS_ADDR"]; !ok {
		env["HOOKLINE_METRICS_ADDR"] = "off"
	}
	if _, ok := env["HOOKLINE_METRICS_TOKEN"]; !ok {
		env["HOOKLINE_METRICS_TOKEN"] = testMetricsToken
	}
	p := &process{t: t, cancel: cancel, done: make(chan error, 1), env: env, addr: env["HOOKLINE_ADDR"]}
	go func() {
		p.done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
	}()
	t.Cleanup(func() { p.stop() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("hookline exited during start: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("readyz not 200 within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *process) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("hookline exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		p.t.Error("hookline did not stop within 60 s")
	}
}

// command runs a one-shot subcommand with the same environment and returns
// its stdout.
func command(t *testing.T, env map[string]string, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, io.Discard)
	if err != nil {
		t.Fatalf("hookline %v: %v", args, err)
	}
	return out.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func api(t *testing.T, addr, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestServeDeliversEndToEnd runs "hookline serve" against a database, makes
// an API key with the CLI, registers a webhook endpoint on a local receiver
// and checks that posted events arrive signed and are recorded delivered.
func TestServeDeliversEndToEnd(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	var lastSig atomic.Value
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		lastSig.Store([]any{r.Header.Clone(), body})
		got.Add(1)
	}))
	defer rcv.Close()
	env := serveEnv(t, dbtest.URL(t))
	p := start(t, env, "serve")
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "e2e"))
	if !strings.HasPrefix(key, "hk_") {
		t.Fatalf("apikey create printed %q last", key)
	}
	status, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, partner)
	}
	status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"})
	if status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	secret, _ := signing.ParseSecret(ep["secret"].(string))
	var lastID string
	for i := range 20 {
		status, ev := api(t, p.addr, key, "POST", "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": i}})
		if status != 202 {
			t.Fatalf("event: %d %v", status, ev)
		}
		lastID = ev["id"].(string)
	}
	deadline := time.Now().Add(20 * time.Second)
	for got.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got.Load() != 20 {
		t.Fatalf("receiver got %d of 20", got.Load())
	}
	pair := lastSig.Load().([]any)
	if err := signing.Verify(secret, pair[0].(http.Header), pair[1].([]byte), time.Now(), time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	for time.Now().Before(deadline) {
		_, ev := api(t, p.addr, key, "GET", "/api/v1/events/"+lastID, nil)
		d := ev["deliveries"].([]any)[0].(map[string]any)
		if d["status"] == "delivered" {
			if a := d["attempts"].([]any); len(a) != 1 || a[0].(map[string]any)["duration_ms"].(float64) <= 0 {
				t.Fatalf("attempts %v", a)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("event never shown as delivered")
}

// TestEmbeddedDatabase: with no DATABASE_URL, serve starts a private
// PostgreSQL in the data directory; a second command on the same directory
// attaches to it; stopping serve stops the cluster.
func TestEmbeddedDatabase(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("no local PostgreSQL installation")
	}
	dir, err := os.MkdirTemp("", "hlserve")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env := map[string]string{"HOOKLINE_DATA_DIR": dir, "HOOKLINE_ADDR": freeAddr(t)}
	p := start(t, env, "serve")
	for _, f := range []string{"secret.key", "session.key"} {
		fi, err := os.Stat(dir + "/" + f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, err, fi)
		}
	}
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "cli"))
	if status, _ := api(t, p.addr, key, "GET", "/api/v1/partners", nil); status != 200 {
		t.Fatalf("key from a second process refused: %d", status)
	}
	out := command(t, env, "correct horse battery\n", "user", "add", "--email", "ops@example.com", "--role", "admin", "--password-stdin")
	if !strings.Contains(out, "ops@example.com") || strings.Contains(out, "password") {
		t.Fatalf("user add: %q", out)
	}
	p.stop()
	if _, err := os.Stat(dir + "/pg/postmaster.pid"); err == nil {
		t.Fatal("embedded PostgreSQL still running after serve stopped")
	}
}

// TestServeWakesItsWorkerInProcess: under "hookline serve" with no other
// replica, the worker owns every shard, and an event posted to the API is
// delivered with no wake-up NOTIFY sent: the ingest names it to the worker
// of its own process. The listener does hear a NOTIFY sent afterwards, so
// its silence means something.
func TestServeWakesItsWorkerInProcess(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer rcv.Close()
	url := dbtest.URL(t)
	env := serveEnv(t, url)
	p := start(t, env, "serve")
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "wake"))
	_, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"}); status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	waitUntil(t, 30*time.Second, "the worker owning every shard", func() bool {
		return strings.Contains(metrics(t, p.addr), "hookline_worker_shards_owned 256")
	})

	ctx := context.Background()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN hookline_deliveries"); err != nil {
		t.Fatal(err)
	}
	notified := func() (string, bool) {
		wait, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		n, err := listener.WaitForNotification(wait)
		if err != nil {
			return "", false
		}
		return n.Payload, true
	}
	if status, ev := api(t, p.addr, key, "POST", "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}}); status != 202 {
		t.Fatalf("event: %d %v", status, ev)
	}
	waitUntil(t, 30*time.Second, "the event delivered", func() bool { return got.Load() >= 1 })
	if payload, ok := notified(); ok {
		t.Fatalf("the ingest sent a wake-up NOTIFY %q with its worker in the process owning every shard", payload)
	}
	// A session hears its own NOTIFY, as it hears any other's.
	if _, err := listener.Exec(ctx, "SELECT pg_notify('hookline_deliveries', 'control')"); err != nil {
		t.Fatal(err)
	}
	if payload, ok := notified(); !ok || payload != "control" {
		t.Fatalf("the listener did not hear a NOTIFY sent to it: %q, %v", payload, ok)
	}
}

// testMetricsToken lets the tests' processes answer /metrics on their
// public listener.
const testMetricsToken = "metrics-token-of-the-tests"

// metrics is the text of GET /metrics, with the tests' metrics token.
func metrics(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testMetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeMetricsListener: /metrics is served on HOOKLINE_METRICS_ADDR,
// and the public listener does not answer it anonymously.
func TestServeMetricsListener(t *testing.T) {
	t.Parallel()
	env := serveEnv(t, dbtest.URL(t))
	metricsAddr := freeAddr(t)
	env["HOOKLINE_METRICS_ADDR"] = metricsAddr
	env["HOOKLINE_METRICS_TOKEN"] = ""
	p := start(t, env)
	res, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("public /metrics: %d, want 404", res.StatusCode)
	}
	res, err = http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "hookline_worker_shards_owned") {
		t.Fatalf("metrics listener: %d\n%.300s", res.StatusCode, body)
	}
}
