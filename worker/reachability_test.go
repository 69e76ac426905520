package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// reachEvery is the tests' check interval: short, so that "within a few
// intervals" is seconds, with the worker's clock standing still, so that
// no cooldown can pass.
const reachEvery = 200 * time.Millisecond

// downAddr is a loopback address and port nothing listens on: an address
// of its own in 127.0.0.0/8 and a port below the kernel's ephemeral range,
// so that no outgoing connection takes it before the test listens on it.
func downAddr(t *testing.T) string {
	t.Helper()
	for range 50 {
		addr := fmt.Sprintf("127.%d.%d.%d:%d", rand.IntN(250)+1, rand.IntN(250)+1, rand.IntN(250)+2, 20000+rand.IntN(12000))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free loopback address")
	return ""
}

// listenAt starts a receiver on addr (a partner back on its address) that
// counts requests and answers 200.
func listenAt(t *testing.T, addr string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { n.Add(1) }))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return &n
}

// waitRounds waits until w has completed n more rounds of checks.
func (e *env) waitRounds(w *Worker, n int64) {
	e.t.Helper()
	from := w.reach.rounds.Load()
	e.waitFor(fmt.Sprintf("%d rounds of reachability checks", n), func() bool { return w.reach.rounds.Load() >= from+n })
}

// lastAttempt is the class and text of an endpoint's latest attempt.
func (e *env) lastAttempt(endpointID int64) (class, text string) {
	e.t.Helper()
	err := e.pool.QueryRow(context.Background(), `SELECT coalesce(error_class, ''), coalesce(error, '') FROM delivery_attempts
		WHERE endpoint_id = $1 ORDER BY started_at DESC, id DESC LIMIT 1`, endpointID).Scan(&class, &text)
	if err != nil {
		e.t.Fatal(err)
	}
	return class, text
}

// TestReachabilityProbesWhenPartnerIsBack: an endpoint whose partner
// refuses connections opens its breaker; while it refuses, the checks fail
// and nothing is sent; once it listens again on the same address, its
// probe comes within a few check intervals, though the worker's clock
// never reaches the cooldown's end, and the backlog drains.
func TestReachabilityProbesWhenPartnerIsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := downAddr(t)
	epID, _ := e.endpoint(endpointOpts{url: "http://" + addr + "/hook", threshold: 3, maxInFlight: 1, maxAttempts: 50})
	e.events(10, "order.created", `{}`)
	clk := newClock()
	metrics := NewMetrics(prometheus.NewRegistry())
	w := e.worker(func(c *Config) {
		c.Now, c.Rand, c.Metrics, c.ReachEvery = clk.Now, fixedRand(0), metrics, reachEvery
	})
	e.run(w)

	e.waitFor("the breaker open", func() bool { return e.health(epID).State == "open" })
	if class, text := e.lastAttempt(epID); !sender.TransportFailure(class, text) {
		t.Fatalf("the latest attempt failed with %s %q, want a refused connection", class, text)
	}
	attempts := e.count("SELECT count(*) FROM delivery_attempts")
	e.waitRounds(w, 3)
	if n := counterValue(t, metrics.reach.WithLabelValues("failed")); n < 2 {
		t.Fatalf("%v failed checks in 3 rounds, want one a round", n)
	}
	if n := counterValue(t, metrics.reach.WithLabelValues("accepted")); n != 0 {
		t.Fatalf("%v checks accepted while nothing listens", n)
	}
	if h := e.health(epID); h.State != "open" || e.count("SELECT count(*) FROM delivery_attempts") != attempts {
		t.Fatalf("while the partner refuses: %+v, %d attempts (was %d)", h, e.count("SELECT count(*) FROM delivery_attempts"), attempts)
	}

	back := time.Now()
	got := listenAt(t, addr)
	e.waitFor("the probe", func() bool { return got.Load() >= 1 })
	wait := time.Since(back)
	t.Logf("the probe came %s after the partner listened again (checks every %s, probe pass every %s)", wait.Round(time.Millisecond), reachEvery, probeEvery)
	// A few intervals; generous for a loaded machine, and far from the
	// 300 s the cooldown would take (which the clock never reaches).
	if wait > 10*time.Second {
		t.Fatalf("the probe came %s after the partner was back", wait)
	}
	// The deliveries that failed are due a second later (the backoff's
	// floor): still far from the cooldown's end.
	clk.Advance(2 * time.Second)
	e.waitFor("closed and drained", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 10
	})
	if h := e.health(epID); h.State != "closed" || h.CooldownSeconds != 300 {
		t.Fatalf("after the probe: %+v", h)
	}
	if n := counterValue(t, metrics.reach.WithLabelValues("accepted")); n != 1 {
		t.Fatalf("%v checks accepted, want the one that started the probe", n)
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1", epID); n != attempts+10 {
		t.Fatalf("%d attempts, want %d before and one per delivery after: a check recorded an attempt", n, attempts)
	}
}

// TestReachability5xxKeepsCooldown: a partner whose server answers 500
// accepts connections throughout: its breaker is not checked, and its
// probe comes at the cooldown's end.
func TestReachability5xxKeepsCooldown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusInternalServerError))
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL, threshold: 3, maxInFlight: 1, maxAttempts: 50})
	e.events(10, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now, c.Rand, c.ReachEvery = clk.Now, fixedRand(0), reachEvery })
	e.run(w)

	e.waitFor("the breaker open", func() bool { return e.health(epID).State == "open" })
	sent := rcv.count.Load()
	e.waitRounds(w, 5)
	if n := w.reach.checks.Load(); n != 0 {
		t.Fatalf("%d reachability checks of a partner that answers 500", n)
	}
	if h := e.health(epID); h.State != "open" || rcv.count.Load() != sent {
		t.Fatalf("before the cooldown's end: %+v, %d requests (was %d)", h, rcv.count.Load(), sent)
	}
	rcv.setHandler(respond(http.StatusOK))
	clk.Advance(300 * time.Second)
	e.waitFor("the cooldown's probe, and the drain", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 10
	})
}

// TestReachabilityProxyKeepsCooldown: an endpoint sent through an egress
// proxy keeps the cooldown's schedule even when its partner refused
// connections: a connection to the proxy would prove nothing. Through the
// proxy (a real tinyproxy), the refusal is the proxy's answer, not a
// transport failure; and a breaker that opened on a direct refusal is not
// checked once the endpoint's requests go through a proxy.
func TestReachabilityProxyKeepsCooldown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy, err := sender.ParseProxy("http://" + sendertest.Tinyproxy(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := downAddr(t)
	epID, _ := e.endpoint(endpointOpts{url: "http://" + addr + "/hook", threshold: 3, maxInFlight: 1, maxAttempts: 50})
	e.events(10, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) {
		c.Now, c.Rand, c.ReachEvery, c.EgressProxy = clk.Now, fixedRand(0), reachEvery, proxy
	})
	e.run(w)

	e.waitFor("the breaker open", func() bool { return e.health(epID).State == "open" })
	if class, text := e.lastAttempt(epID); sender.TransportFailure(class, text) {
		t.Fatalf("through the proxy the latest attempt is %s %q, a transport failure", class, text)
	}
	got := listenAt(t, addr)
	e.waitRounds(w, 5)
	if n := w.reach.checks.Load(); n != 0 {
		t.Fatalf("%d reachability checks of an endpoint behind a proxy", n)
	}
	if h := e.health(epID); h.State != "open" || got.Load() != 0 {
		t.Fatalf("before the cooldown's end: %+v, %d requests", h, got.Load())
	}

	// The same breaker as if it had opened on a direct refusal: the worker
	// sending through the proxy leaves it alone, a direct one checks it.
	opened := e.health(epID).OpenedAt
	refused, text := sender.ClassConnect, "connection refused"
	row := db.EndpointReachCandidatesRow{EndpointID: epID, State: "open", OpenedAt: opened, CooldownSeconds: 300,
		ConsecutiveFailures: 3, URL: "http://" + addr + "/hook", TimeoutMs: 5000, LastErrorClass: &refused, LastError: &text}
	ctx := context.Background()
	if targets := w.reach.targets(ctx, []db.EndpointReachCandidatesRow{row}, reachEvery); len(targets) != 0 {
		t.Fatalf("behind the default proxy: %d targets, want none", len(targets))
	}
	direct := e.worker(func(c *Config) { c.Now = clk.Now })
	if targets := direct.reach.targets(ctx, []db.EndpointReachCandidatesRow{row}, reachEvery); len(targets) != 1 {
		t.Fatalf("sent directly: %d targets, want the endpoint", len(targets))
	}

	clk.Advance(300 * time.Second)
	e.waitFor("the cooldown's probe through the proxy, and the drain", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 10
	})
}
