package worker

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
)

// alive starts w's liveness lock and heartbeat the way Run does, and
// returns a kill function that ends the lock's session as a process death
// would (without releasing leases or deleting the heartbeat).
func (e *env) alive(w *Worker) (kill func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.live.holdLiveness(ctx, held) })
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		e.t.Fatal("liveness lock not held within 10 s")
	}
	e.waitFor("the worker's heartbeat", func() bool {
		return e.count("SELECT count(*) FROM worker_heartbeats WHERE worker_id = $1", w.cfg.WorkerID) == 1
	})
	var once sync.Once
	kill = func() {
		once.Do(func() {
			key := w.live.lockKey.Load()
			cancel()
			wg.Wait()
			// The server releases the lock when it has processed the
			// closed session, a moment after the client returns: wait
			// until it is observably free, as it is after a real death.
			e.waitFor("the liveness lock released", func() bool {
				return e.count(`SELECT count(*) FROM pg_locks WHERE `+inThisDatabase+` AND locktype = 'advisory' AND objsubid = 1
					AND classid::bigint = $1 AND objid::bigint = $2`, int64(uint32(key>>32)), int64(uint32(key))) == 0
			})
		})
	}
	e.t.Cleanup(kill)
	return kill
}

// TestDeadWorkerRescuedBeforeItsLeaseExpires: a worker that dies with
// leased deliveries (breaker probes, or rows an older version's worker
// claimed) loses them to a survivor as soon as its liveness lock is gone,
// long before their lease (10 s timeout + 30 s margin) would run out, while
// a worker that is alive but never finishes its sends keeps every lease it
// holds. The clock is frozen, so lease expiry cannot be what frees the rows.
func TestDeadWorkerRescuedBeforeItsLeaseExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	deadEP, _ := e.endpoint(endpointOpts{url: rcv.URL, timeoutMs: 10000, maxInFlight: 20})
	slowEP, _ := e.endpoint(endpointOpts{url: rcv.URL, timeoutMs: 10000, maxInFlight: 20})
	e.events(20, "order.created", `{}`) // one delivery to each endpoint per event
	clk := newClock()
	ctx := context.Background()
	lease := func(workerID string, endpointID int64) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'in_flight', lease_owner = $1, lease_expires_at = $2
			WHERE endpoint_id = $3`, workerID, clk.Now().Add(40*time.Second), endpointID); err != nil {
			t.Fatal(err)
		}
	}

	dead := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "dead" })
	kill := e.alive(dead)
	lease("dead", deadEP)
	slow := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "slow" })
	e.alive(slow)
	lease("slow", slowEP)

	survivor := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "survivor" })
	e.alive(survivor)
	if found, err := survivor.q.WorkerFindDead(ctx, survivor.cfg.WorkerID); err != nil || len(found) != 0 {
		t.Fatalf("while everyone is alive, found dead: %v (%v)", found, err)
	}

	kill()
	e.waitFor("the dead worker's deliveries rescued", func() bool {
		if err := survivor.live.reapDead(ctx); err != nil {
			t.Fatal(err)
		}
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'failed'", deadEP) == 20
	})
	if n := e.count("SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1 AND error_class = 'lease_expired'", deadEP); n != 20 {
		t.Fatalf("lease_expired attempts for the dead worker's deliveries = %d, want 20", n)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'in_flight' AND lease_owner = 'slow'", slowEP); n != 20 {
		t.Fatalf("the slow worker kept %d of its 20 leases", n)
	}
	if n := e.count("SELECT count(*) FROM worker_heartbeats WHERE worker_id = 'dead'"); n != 0 {
		t.Fatal("the dead worker's heartbeat was kept: it would still count as a replica")
	}
	found, err := survivor.q.WorkerFindDead(ctx, survivor.cfg.WorkerID)
	if err != nil || slices.Contains(found, "slow") {
		t.Fatalf("the slow worker was found dead: %v (%v)", found, err)
	}
}

// TestDeadWorkerConfirmedTwice: a lock seen free once is only a suspicion;
// the leases move only when a second look, deadConfirm later, finds it free
// again. A worker whose lock comes back in between (a PostgreSQL restart
// ends every session, and live workers take their locks again) keeps its
// leases.
func TestDeadWorkerConfirmedTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL, timeoutMs: 10000, maxInFlight: 20})
	e.events(5, "order.created", `{}`)
	clk := newClock()
	ctx := context.Background()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "blinking" })
	kill := e.alive(w)
	if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'in_flight', lease_owner = 'blinking', lease_expires_at = $1`,
		clk.Now().Add(40*time.Second)); err != nil {
		t.Fatal(err)
	}
	survivor := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "survivor" })
	e.alive(survivor)

	kill()
	if err := survivor.live.reapDead(ctx); err != nil {
		t.Fatal(err)
	}
	if _, suspected := survivor.live.suspects["blinking"]; !suspected {
		t.Fatal("a worker without its lock is not suspected")
	}
	// It comes back (same key, as after a reconnect) before the second look.
	back := e.alive(w)
	defer back()
	survivor.live.suspects["blinking"] = time.Now().Add(-2 * deadConfirm)
	if err := survivor.live.reapDead(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'in_flight' AND lease_owner = 'blinking'"); n != 5 {
		t.Fatalf("a worker that took its lock again lost %d of its 5 leases", 5-n)
	}
	if _, suspected := survivor.live.suspects["blinking"]; suspected {
		t.Fatal("a worker holding its lock again is still suspected")
	}
}

// TestNoClaimsWithoutLivenessLock: a worker that cannot take its lock (here
// another session holds the key, as a replica checking it would) claims
// nothing; after a second of trying it picks another key, holds it, and only
// then delivers.
func TestNoClaimsWithoutLivenessLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	w := e.worker(nil)
	first := w.live.lockKey.Load()
	conn, err := e.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock_all()")
	if ok, err := db.New(conn).WorkerLockHold(context.Background(), first); err != nil || !ok {
		t.Fatalf("take the key: %v %v", ok, err)
	}
	var keyAtFirstSend atomic.Int64
	rcv.setHandler(func(rw http.ResponseWriter, _ *http.Request) {
		keyAtFirstSend.CompareAndSwap(0, w.live.lockKey.Load())
		rw.WriteHeader(http.StatusOK)
	})
	e.events(3, "order.created", `{}`)
	stop := e.run(w)
	defer stop()
	e.waitFor("delivered", func() bool { return rcv.count.Load() == 3 })
	if k := keyAtFirstSend.Load(); k == first {
		t.Fatal("sent while another session held the worker's liveness key")
	}
}
