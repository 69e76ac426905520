package worker

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/sender"
)

// TestBreakerOpensProbesAndCloses walks the breaker end to end: a failing
// receiver opens it at the threshold; while open nothing is claimed and
// attempt counts stay; after the cooldown exactly one probe is sent; a failed
// probe doubles the cooldown; a successful one closes the breaker and the
// backlog drains.
func TestBreakerOpensProbesAndCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusServiceUnavailable))
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL, threshold: 3, maxInFlight: 1, maxAttempts: 50})
	e.events(10, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0) })
	e.run(w)
	ctx := context.Background()

	// Three of the ten deliveries fail one after another: each failure is
	// retried a second later (the backoff floor, jitter 0, and the clock
	// stands still), so the next delivery due is another of the ten. The
	// third failure opens the breaker in the transaction that records it,
	// before the in-flight cap of 1 lets a fourth be claimed.
	e.waitFor("three attempts recorded", func() bool { return e.count("SELECT count(*) FROM delivery_attempts") == 3 })
	if n := e.count("SELECT count(DISTINCT delivery_id) FROM delivery_attempts"); n != 3 || rcv.count.Load() != 3 {
		t.Fatalf("%d requests for %d deliveries before the breaker opened, want 3 and 3", rcv.count.Load(), n)
	}
	h := e.health(epID)
	if h.State != "open" || h.ConsecutiveFailures != 3 || h.CooldownSeconds != 300 {
		t.Fatalf("after 3 failures: %+v", h)
	}
	before := e.count("SELECT sum(attempt_count) FROM deliveries")
	clk.Advance(10 * time.Second)
	e.claimsNothing("breaker open", w)
	if rcv.count.Load() != 3 || e.count("SELECT sum(attempt_count) FROM deliveries") != before {
		t.Fatal("an open breaker's deliveries were claimed")
	}

	// Cooldown over: exactly one probe, which fails → cooldown doubles. The
	// counter is read before the clock moves, and checked only once the probe
	// has been answered: the worker's own maintenance loop may take the probe
	// before the passes below do, or be claiming it while they run.
	claimed := w.claims.claimedRows.Load()
	clk.Advance(300 * time.Second)
	w.claims.probe(ctx)
	w.claims.probe(ctx) // a second pass (or replica) must not send another probe
	e.waitFor("probe", func() bool { return rcv.count.Load() == 4 })
	if n := w.claims.claimedRows.Load() - claimed; n != 1 {
		t.Fatalf("two probe passes and the maintenance loop claimed %d deliveries, want exactly one probe", n)
	}
	e.waitFor("reopened", func() bool { return e.health(epID).State == "open" })
	if h := e.health(epID); h.CooldownSeconds != 600 || h.ProbeDeliveryID != nil {
		t.Fatalf("after failed probe: %+v", h)
	}
	e.claimsNothing("reopened after the probe", w)
	if rcv.count.Load() != 4 {
		t.Fatalf("more than one probe: %d requests", rcv.count.Load())
	}

	// Partner recovers: the next probe closes the breaker, the backlog drains.
	rcv.setHandler(respond(http.StatusOK))
	clk.Advance(600 * time.Second)
	w.claims.probe(ctx)
	e.waitFor("closed and drained", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 10
	})
	if h := e.health(epID); h.State != "closed" || h.ConsecutiveFailures != 0 || h.CooldownSeconds != 300 {
		t.Fatalf("after recovery: %+v", h)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'"); n != 0 {
		t.Fatalf("%d deliveries died while the breaker was open", n)
	}
}

// TestLostProbeReopens: a probe whose worker dies is a failed probe.
func TestLostProbeReopens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	epID, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:9/", timeoutMs: 1000})
	e.events(2, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now })
	e.sole(w) // only the endpoint's owner probes it
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, "UPDATE endpoint_health SET state = 'open', opened_at = $1 WHERE endpoint_id = $2", clk.Now(), epID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(301 * time.Second)
	if err := w.claims.startProbes(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := w.q.DeliveryClaimProbes(ctx, dbClaimProbes(w))
	if err != nil || len(rows) != 1 {
		t.Fatalf("probe claim: %d rows, %v", len(rows), err)
	}
	if again, _ := w.q.DeliveryClaimProbes(ctx, dbClaimProbes(w)); len(again) != 0 {
		t.Fatal("a second probe was claimed")
	}
	clk.Advance(32 * time.Second)
	if n, err := w.maint.rescue(ctx); n != 1 || err != nil {
		t.Fatalf("rescue: %d, %v", n, err)
	}
	if h := e.health(epID); h.State != "open" || h.CooldownSeconds != 600 || h.ProbeDeliveryID != nil {
		t.Fatalf("lost probe: %+v", h)
	}
}

// TestHealthyBatchesLockNoHealthRow: completion batches that change
// nothing on an endpoint's health row (successes at a closed endpoint whose
// last_success_at is fresh) neither write nor lock it. A row lock leaves
// the locker's transaction id in the row's xmax; an update leaves a new
// version whose xmax is 0. A failure still locks and writes.
func TestHealthyBatchesLockNoHealthRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	clk := newClock() // stands still: every success finishes at the same instant
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0); c.FlushSize = 2 })
	e.run(w)
	delivered := func(n int) func() bool {
		return func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == n }
	}

	e.events(4, "order.created", `{}`)
	e.waitFor("first deliveries", delivered(4))
	// Two of those batches may have read the row before the first wrote
	// last_success_at, and locked it. A new version starts with xmax 0.
	if _, err := e.pool.Exec(context.Background(), "UPDATE endpoint_health SET updated_at = updated_at WHERE endpoint_id = $1", epID); err != nil {
		t.Fatal(err)
	}
	first := e.health(epID)
	if first.LastSuccessAt == nil || !first.LastSuccessAt.Equal(clk.Now()) {
		t.Fatalf("last_success_at %v after the first successes, want %v", first.LastSuccessAt, clk.Now())
	}
	e.events(20, "order.created", `{}`)
	e.waitFor("more deliveries", delivered(24))
	// A committed transaction in xmax of the visible version locked the
	// row. The worker's own maintenance may be updating the row's latency
	// figures right now (refreshHealth): a transaction still in progress
	// is waited for (its new version's xmax is 0), an aborted one left no
	// mark. "In progress" is judged by the statement's snapshot, not by
	// pg_xact_status alone: an updater that commits between the snapshot
	// and the status lookup leaves the old version visible with a
	// committed xmax.
	e.waitFor("the health row's last writer to finish", func() bool {
		var x, status string
		if err := e.pool.QueryRow(context.Background(), `SELECT xmax::text,
			CASE WHEN xmax::text = '0' THEN 'none'
			     WHEN NOT pg_visible_in_snapshot(xmax::text::xid8, pg_current_snapshot()) THEN 'in progress'
			     ELSE coalesce(pg_xact_status(xmax::text::xid8), 'unknown') END
			FROM endpoint_health WHERE endpoint_id = $1`, epID).Scan(&x, &status); err != nil {
			t.Fatal(err)
		}
		if status != "none" && status != "aborted" && status != "in progress" {
			t.Fatalf("health row xmax %s (%s) after batches that change nothing: it was locked", x, status)
		}
		return status != "in progress"
	})
	if h := e.health(epID); h.UpdatedAt != first.UpdatedAt {
		t.Fatalf("health row written by batches that change nothing (updated_at %v, was %v)", h.UpdatedAt, first.UpdatedAt)
	}

	rcv.setHandler(respond(http.StatusServiceUnavailable))
	e.events(1, "order.created", `{}`)
	e.waitFor("a failure recorded", func() bool { return e.health(epID).ConsecutiveFailures == 1 })
}

// TestHealthRowWrittenOnlyWhenItMatters: a batch of successes on a healthy
// endpoint only moves last_success_at, which is written at most once per
// successResolution; anything the breaker decides is always written.
func TestHealthRowWrittenOnlyWhenItMatters(t *testing.T) {
	t.Parallel()
	p := breaker.DefaultPolicy()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	row := func(failures int32, lastSuccess time.Time) db.EndpointHealthLockRow {
		return db.EndpointHealthLockRow{State: "closed", ConsecutiveFailures: failures, CooldownSeconds: 300,
			LastSuccessAt: &lastSuccess, FailureThreshold: 10}
	}
	ok := func(at time.Time) *outcome {
		return &outcome{d: claimed{ID: 1}, res: sender.Result{Outcome: sender.OK}, finished: at}
	}
	fail := func(at time.Time) *outcome {
		return &outcome{d: claimed{ID: 1}, res: sender.Result{Outcome: sender.Transient, ErrorClass: sender.ClassHTTPStatus}, finished: at}
	}

	s := newHealthState(p, row(0, t0))
	s.apply(p, ok(t0.Add(300*time.Millisecond)))
	s.apply(p, ok(t0.Add(900*time.Millisecond)))
	if s.needsWrite() {
		t.Error("successes within a second of the stored one were written")
	}
	s.apply(p, ok(t0.Add(time.Second)))
	if !s.needsWrite() {
		t.Error("last_success_at a second stale was not written")
	}

	s = newHealthState(p, row(3, t0))
	s.apply(p, ok(t0.Add(time.Millisecond)))
	if !s.needsWrite() {
		t.Error("a success that resets consecutive failures was not written")
	}

	s = newHealthState(p, row(0, t0))
	s.apply(p, fail(t0.Add(time.Millisecond)))
	if !s.needsWrite() {
		t.Error("a failure was not written")
	}

	s = newHealthState(p, db.EndpointHealthLockRow{State: "closed", CooldownSeconds: 300, FailureThreshold: 10})
	s.apply(p, ok(t0))
	if !s.needsWrite() {
		t.Error("the first success ever was not written")
	}
}
