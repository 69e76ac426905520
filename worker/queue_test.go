package worker

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/sender"
)

// TestReplicasNeverDoubleSend runs two workers on one database and one
// receiver: every delivery arrives exactly once.
func TestReplicasNeverDoubleSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := e.onceReceiver("")
	for i := range 4 {
		e.endpoint(endpointOpts{url: fmt.Sprintf("%s/ep%d", rcv.URL, i), maxInFlight: 50})
	}
	e.events(500, "order.created", `{"n":1}`)
	a := e.worker(func(c *Config) { c.WorkerID = "replica-a"; c.ClaimBatch = 37 })
	b := e.worker(func(c *Config) { c.WorkerID = "replica-b"; c.ClaimBatch = 41 })
	e.run(a)
	e.run(b)
	e.waitFor("2000 deliveries", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 2000
	})
	rcv.eachOnce(t, 2000)
	if n := e.count("SELECT count(DISTINCT d.id) FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id"); n != 2000 {
		t.Fatalf("attempted deliveries = %d", n)
	}
	both := e.count("SELECT count(*) FROM worker_heartbeats")
	if both != 2 {
		t.Logf("heartbeats: %d", both)
	}
}

// TestInFlightCapIsShared checks max_in_flight holds across replicas.
func TestInFlightCapIsShared(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	var mu sync.Mutex
	cur, peak := 0, 0
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		cur--
		mu.Unlock()
	})
	e.endpoint(endpointOpts{url: rcv.URL, maxInFlight: 3})
	e.events(40, "order.created", `{}`)
	e.run(e.worker(func(c *Config) { c.WorkerID = "a" }))
	e.run(e.worker(func(c *Config) { c.WorkerID = "b" }))
	e.waitFor("all delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 40 })
	if peak > 3 {
		t.Fatalf("peak concurrency %d exceeds max_in_flight 3", peak)
	}
}

// TestCrashedWorkersClaimsGoToTheSurvivor: a worker claims deliveries and
// then "dies" (never sends nor completes; its session ends): they are still
// due in the table, and the survivor, which takes the dead worker's shards,
// delivers each one once, with no attempt used by the crash. The crashed
// worker's late results are fenced off.
func TestCrashedWorkersClaimsGoToTheSurvivor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL, timeoutMs: 1000, maxAttempts: 1, maxInFlight: 100})
	e.events(30, "order.created", `{}`)
	clk := newClock()
	dead := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "crashed" })
	kill := e.sole(dead)
	rows, err := dead.claims.claim(context.Background(), 100, nil)
	if err != nil || len(rows) != 30 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'pending' AND attempt_count = 0 AND lease_owner IS NULL"); n != 30 {
		t.Fatalf("a claim wrote to the table: %d of 30 deliveries still as queued", n)
	}
	kill()
	if _, err := dead.claims.claim(context.Background(), 100, nil); err == nil {
		t.Fatal("a worker without its session claimed")
	}
	live := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "survivor" })
	e.run(live)
	e.waitFor("all delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 30 })
	if got := rcv.count.Load(); got != 30 {
		t.Fatalf("receiver got %d requests, want 30", got)
	}
	// max_attempts was 1, and the crash used no attempt.
	if n := e.count("SELECT count(*) FROM deliveries WHERE attempt_count = 1"); n != 30 {
		t.Fatalf("deliveries with 1 attempt = %d, want 30", n)
	}
	// The crashed worker's late results are fenced off...
	for i := range rows {
		dead.results <- outcome{d: rows[i], finished: clk.Now(), res: sender.Result{Outcome: sender.Transient, StatusCode: 503, Started: clk.Now()}}
	}
	close(dead.results)
	dead.complete.Run()
	if n := e.count("SELECT count(*) FROM deliveries WHERE status <> 'delivered'"); n != 0 {
		t.Fatalf("stale results changed %d deliveries", n)
	}
	// ... and add no attempt.
	if n := e.count("SELECT count(*) FROM delivery_attempts"); n != 30 {
		t.Fatalf("attempt rows = %d, want 30", n)
	}
}

// TestRescueOfLeasedRows: a delivery leased (a breaker probe, or a row an
// older version's worker claimed) by a worker that stopped is rescued
// after its lease: the lost attempt is recorded as lease_expired, counts
// without exhausting the budget, and the delivery is sent.
func TestRescueOfLeasedRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL, timeoutMs: 1000, maxAttempts: 1, maxInFlight: 100})
	e.events(30, "order.created", `{}`)
	clk := newClock()
	if _, err := e.pool.Exec(context.Background(), `UPDATE deliveries SET status = 'in_flight', lease_owner = 'crashed',
		lease_expires_at = $1`, clk.Now().Add(31*time.Second)); err != nil {
		t.Fatal(err)
	}
	live := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "survivor" })
	if n, err := live.maint.rescue(context.Background()); err != nil || n != 0 {
		t.Fatalf("rescued %d before the lease expired (%v)", n, err)
	}
	clk.Advance(32 * time.Second)
	if n, err := live.maint.rescue(context.Background()); err != nil || n != 30 {
		t.Fatalf("rescued %d, want 30 (%v)", n, err)
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts WHERE error_class = 'lease_expired' AND attempt_no = 1"); n != 30 {
		t.Fatalf("lease_expired attempts = %d", n)
	}
	e.run(live)
	e.waitFor("all delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 30 })
	if got := rcv.count.Load(); got != 30 {
		t.Fatalf("receiver got %d requests, want 30", got)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE attempt_count = 2"); n != 30 {
		t.Fatalf("deliveries with 2 attempts (lost + delivered) = %d", n)
	}
}

// TestGracefulShutdownFinishesInFlight: SIGTERM lets slow sends finish
// within the grace period and leaves nothing in flight.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	started := make(chan struct{}, 100)
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
	})
	e.endpoint(endpointOpts{url: rcv.URL, maxInFlight: 5})
	e.events(20, "order.created", `{}`)
	stop := e.run(e.worker(nil))
	for range 5 {
		<-started
	}
	stop()
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'in_flight'"); n != 0 {
		t.Fatalf("%d deliveries left in flight", n)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'"); n < 5 {
		t.Fatalf("only %d delivered: in-flight sends were cut off", n)
	}
	if n := e.count("SELECT count(*) FROM worker_heartbeats"); n != 0 {
		t.Fatal("heartbeat left behind")
	}
}

// TestGracefulShutdownCancelsAfterGrace: sends still running when the grace
// period ends are cancelled and left due, as they were, without using an
// attempt.
func TestGracefulShutdownCancelsAfterGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	block := make(chan struct{})
	started := make(chan struct{}, 100)
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	e.endpoint(endpointOpts{url: rcv.URL, maxInFlight: 4, timeoutMs: 60000})
	e.events(4, "order.created", `{}`)
	stop := e.run(e.worker(func(c *Config) { c.ShutdownGrace = 200 * time.Millisecond }))
	for range 4 {
		<-started
	}
	begin := time.Now()
	stop()
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("shutdown took %s with a 200 ms grace", took)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'pending' AND attempt_count = 0 AND lease_expires_at IS NULL AND next_attempt_at <= now()"); n != 4 {
		t.Fatalf("%d deliveries due again, want 4", n)
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts"); n != 0 {
		t.Fatalf("cancelled sends recorded %d attempts", n)
	}
}

// TestQueuedTooLongGoesBackUnsent: a claimed delivery that waited in the
// local queue for half the lease margin (every sender stuck on slow
// partners) is not sent that late: it is left due, without using an
// attempt, and no longer held. So is one still queued when the worker stops
// claiming.
func TestQueuedTooLongGoesBackUnsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL, maxAttempts: 1})
	e.events(3, "order.created", `{}`)
	w := e.worker(nil)
	e.sole(w)
	rows, err := w.claims.claim(context.Background(), 10, nil)
	if err != nil || len(rows) != 3 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	w.claims.queue <- queued{d: rows[0], at: time.Now().Add(-w.cfg.LeaseMargin)} // waited too long
	w.claims.queue <- queued{d: rows[1], at: time.Now()}                         // fresh: sent
	close(w.claims.queue)
	w.dispatch.sendLoop(context.Background(), context.Background())
	queue := make(chan queued, 1)
	w.dispatch.queue = queue
	queue <- queued{d: rows[2], at: time.Now()} // claiming has stopped
	close(queue)
	w.dispatch.sendLoop(stopped, context.Background())
	close(w.results)
	w.complete.Run()

	if n := rcv.count.Load(); n != 1 {
		t.Fatalf("receiver got %d requests, want 1", n)
	}
	for _, i := range []int{0, 2} {
		var status string
		var attempts int32
		if err := e.pool.QueryRow(context.Background(), "SELECT status, attempt_count FROM deliveries WHERE id = $1", rows[i].ID).Scan(&status, &attempts); err != nil {
			t.Fatal(err)
		}
		if status != "pending" || attempts != 0 {
			t.Fatalf("unsent delivery %d is %s with %d attempts, want pending (due again) with 0", i, status, attempts)
		}
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'"); n != 1 {
		t.Fatalf("delivered = %d, want 1", n)
	}
	if n, _ := w.claims.held.counts(); n != 0 {
		t.Fatalf("%d deliveries still held: the claim would skip them", n)
	}
}

// TestUnstorableResultIsSentAgainLater: a result PostgreSQL refuses (here
// an error text with a NUL byte, which no text column takes) fails its
// whole batch; the batch is split until the lone failure is found, the
// others are recorded, and the refused delivery, still due in the table,
// stays held for LeaseMargin before it is claimed again, rather than being
// claimed and sent again at once, in a loop if its result can never be
// stored.
func TestUnstorableResultIsSentAgainLater(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	e.events(3, "order.created", `{}`)
	w := e.worker(func(c *Config) { c.LeaseMargin = 300 * time.Millisecond })
	e.sole(w)
	ctx := context.Background()
	rows, err := w.claims.claim(ctx, 10, nil)
	if err != nil || len(rows) != 3 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	now := time.Now()
	batch := make([]outcome, len(rows))
	for i := range rows {
		batch[i] = outcome{d: rows[i], finished: now, res: sender.Result{Outcome: sender.Transient, StatusCode: 503, Error: "503", Started: now}}
	}
	batch[1].res.Error = "bad \x00 byte"
	for i := range batch {
		w.results <- batch[i]
	}
	close(w.results)
	w.complete.Run()
	if n := e.count("SELECT count(*) FROM deliveries WHERE attempt_count = 1"); n != 2 {
		t.Fatalf("%d results recorded, want the 2 storable ones", n)
	}
	if again, err := w.claims.claim(ctx, 10, nil); err != nil || len(again) != 0 {
		t.Fatalf("the refused delivery was claimed again at once: %d rows, %v", len(again), err)
	}
	e.waitFor("the refused delivery claimable again", func() bool {
		again, err := w.claims.claim(ctx, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(again) == 1 && again[0].ID == rows[1].ID
	})
}
