package worker

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
)

// TestAssignShards: every shard goes to exactly one live worker, the
// shares are near even, and a worker joining takes shards only for itself
// (none moves between the others), so ownership moves as little as it
// can.
func TestAssignShards(t *testing.T) {
	t.Parallel()
	ids := []string{"host-1-a1b2", "host-2-c3d4", "other-77-0001", "w4", "w5", "w6", "w7", "w8"}
	assign := func(workers []string) map[string]shardSet {
		out := map[string]shardSet{}
		for i, w := range workers {
			others := append(append([]string{}, workers[:i]...), workers[i+1:]...)
			out[w] = assignShards(w, others)
		}
		return out
	}
	for n := 1; n <= len(ids); n++ {
		t.Run(fmt.Sprintf("%d workers", n), func(t *testing.T) {
			got := assign(ids[:n])
			for s := range shardCount {
				owners := 0
				for _, set := range got {
					if set[s] {
						owners++
					}
				}
				if owners != 1 {
					t.Fatalf("shard %d has %d owners", s, owners)
				}
			}
			fair := float64(shardCount) / float64(n)
			for w, set := range got {
				if c := float64(set.count()); c < fair*0.6 || c > fair*1.4 {
					t.Errorf("%s owns %v shards of %d, fair share %.0f", w, c, shardCount, fair)
				}
			}
			if n == len(ids) {
				return
			}
			joined := assign(ids[:n+1])
			for _, w := range ids[:n] {
				for s := range shardCount {
					if joined[w][s] && !got[w][s] {
						t.Fatalf("shard %d moved to %s, which was already running, when %s joined", s, w, ids[n])
					}
				}
			}
		})
	}
}

// shardLockHolders counts, for each shard lock held in the test's database, the
// sessions holding it.
func (e *env) shardLockHolders() map[int]int {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT objid::int, count(*)::int FROM pg_locks
		WHERE `+inThisDatabase+` AND locktype = 'advisory' AND objsubid = 2 AND classid = $1 AND granted GROUP BY objid`, shardLockClass)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var s, n int
		if err := rows.Scan(&s, &n); err != nil {
			e.t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// shardHolder is the backend pid of the session holding a shard's lock (0
// when none does).
func (e *env) shardHolder(shard int) int {
	e.t.Helper()
	return e.count(`SELECT coalesce(max(pid), 0)::int FROM pg_locks
		WHERE `+inThisDatabase+` AND locktype = 'advisory' AND objsubid = 2 AND classid = $1 AND objid = $2 AND granted`, shardLockClass, shard)
}

// sessionPID is the backend pid of w's liveness session (0 without one).
func (w *Worker) sessionPID() int {
	w.live.own.mu.Lock()
	defer w.live.own.mu.Unlock()
	if w.live.own.conn == nil {
		return 0
	}
	return int(w.live.own.conn.PgConn().PID())
}

// TestShardsMoveWhenAWorkerDies: three live workers divide the shards,
// each lock held by one session; when one dies (its session ends), the
// other two take its shards at once, without waiting for anything to
// expire, and keep their own.
func TestShardsMoveWhenAWorkerDies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.worker(func(c *Config) { c.WorkerID = "a" })
	b := e.worker(func(c *Config) { c.WorkerID = "b" })
	c := e.worker(func(c *Config) { c.WorkerID = "c" })
	e.alive(a)
	killB := e.alive(b)
	e.alive(c)
	e.owning(a, b, c)
	held := e.shardLockHolders()
	if len(held) != shardCount {
		t.Fatalf("%d shard locks held, want %d", len(held), shardCount)
	}
	for s, n := range held {
		if n != 1 {
			t.Fatalf("shard %d held by %d sessions", s, n)
		}
	}
	aBefore, cBefore := a.live.own.claimable(), c.live.own.claimable()
	start := time.Now()
	killB()
	e.owning(a, c)
	t.Logf("the dead worker's shards moved %s after its session ended", time.Since(start).Round(time.Millisecond))
	for s := range shardCount {
		if (aBefore[s] && !a.live.own.claimable()[s]) || (cBefore[s] && !c.live.own.claimable()[s]) {
			t.Fatalf("shard %d left a live worker when another died", s)
		}
	}
}

// onceReceiver counts every delivery it receives (by webhook-id and path)
// and holds requests to one path open until open is called (or the test
// ends, so that a failing test does not hang on its own receiver).
type onceReceiver struct {
	*receiver
	mu      sync.Mutex
	seen    map[string]int
	release chan struct{}
	once    sync.Once
}

func (e *env) onceReceiver(heldPath string) *onceReceiver {
	e.t.Helper()
	r := &onceReceiver{receiver: newReceiver(e.t), seen: map[string]int{}, release: make(chan struct{})}
	e.t.Cleanup(r.open) // before the receiver closes, which waits for its handlers
	r.setHandler(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen[req.Header.Get("webhook-id")+req.URL.Path]++
		r.mu.Unlock()
		if heldPath != "" && req.URL.Path == heldPath {
			<-r.release
		}
	})
	return r
}

func (r *onceReceiver) open() { r.once.Do(func() { close(r.release) }) }

// at is how many distinct deliveries to paths ending in suffix arrived.
func (r *onceReceiver) at(suffix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k := range r.seen {
		if strings.HasSuffix(k, suffix) {
			n++
		}
	}
	return n
}

// eachOnce fails the test unless every delivery arrived exactly once and
// want of them arrived.
func (r *onceReceiver) eachOnce(t *testing.T, want int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range r.seen {
		if n != 1 {
			t.Fatalf("%s received %d times", k, n)
		}
	}
	if len(r.seen) != want {
		t.Fatalf("%d deliveries received, want %d", len(r.seen), want)
	}
}

// TestShardGivenUpOnlyWhenDrained: when a second worker starts, the first
// gives it its shards, but a shard only once every delivery it holds of
// that shard has its result recorded: until then neither claims it, and
// nothing is sent twice.
func TestShardGivenUpOnlyWhenDrained(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := e.onceReceiver("/moving")
	// An endpoint whose shard goes to b once b runs, and one that stays a's.
	var moving, staying int64
	for moving == 0 || staying == 0 {
		path := "/moving"
		if moving != 0 {
			path = "/staying"
		}
		id, _ := e.endpoint(endpointOpts{url: rcv.URL + path, maxInFlight: 3})
		switch toB := assignShards("b", []string{"a"})[shardOf(id)]; {
		case toB && moving == 0:
			moving = id
		case !toB && moving != 0 && staying == 0:
			staying = id
		default:
			if _, err := e.pool.Exec(context.Background(), "UPDATE endpoints SET enabled = false, url = url || '/unused' WHERE id = $1", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := e.worker(func(c *Config) { c.WorkerID = "a" })
	e.run(a)
	e.owning(a)
	e.events(10, "order.created", `{}`)
	e.waitFor("a's three sends to the moving endpoint held", func() bool { return rcv.at("/moving") == 3 })

	b := e.worker(func(c *Config) { c.WorkerID = "b" })
	e.run(b)
	e.waitFor("a to stop claiming the moving endpoint's shard", func() bool { return !a.live.own.claimable()[shardOf(moving)] })
	// a still holds the lock (its sends are out), so b cannot have it.
	if pid, holder := a.sessionPID(), e.shardHolder(shardOf(moving)); holder != pid || b.live.own.claimable()[shardOf(moving)] {
		t.Fatalf("the moving shard's lock is held by session %d (a's is %d) while a's sends to it are in flight", holder, pid)
	}
	e.waitFor("the staying endpoint delivered", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'", staying) == 10
	})
	rcv.open()
	e.waitFor("every delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 20 })
	if !b.live.own.claimable()[shardOf(moving)] {
		t.Fatal("the moving shard did not reach b")
	}
	rcv.eachOnce(t, 20)
	if b.claims.claimedRows.Load() == 0 {
		t.Fatal("b claimed nothing: the handover did not happen while deliveries were due")
	}
}

// TestSessionLostAndRetaken: a lone worker's liveness session is ended by
// the server in the middle of a drain (as a PostgreSQL restart or a
// dropped connection would), with sends to one endpoint held open by the
// receiver. The worker claims nothing while it has no session, takes its
// shards again with a new one, and since it still holds what it had
// claimed, it does not claim the held sends again: nothing is sent twice.
func TestSessionLostAndRetaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := e.onceReceiver("/held")
	e.endpoint(endpointOpts{url: rcv.URL + "/held", maxInFlight: 4})
	for i := range 3 {
		e.endpoint(endpointOpts{url: fmt.Sprintf("%s/ep%d", rcv.URL, i), maxInFlight: 16})
	}
	w := e.worker(nil)
	e.run(w)
	e.owning(w)
	e.events(100, "order.created", `{}`)
	e.waitFor("four sends held open", func() bool { return rcv.at("/held") == 4 })
	old := w.sessionPID()
	if n := e.count("SELECT count(pg_terminate_backend($1))::int", old); n != 1 {
		t.Fatalf("terminated %d sessions", n)
	}
	e.waitFor("a new session owning every shard", func() bool {
		pid := w.sessionPID()
		return pid != 0 && pid != old && w.live.own.claimable().count() == shardCount
	})
	passes := w.claims.claimPasses.Load()
	e.waitFor("two claim passes on the new session", func() bool { return w.claims.claimPasses.Load() >= passes+2 })
	rcv.open()
	e.waitFor("every delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 400 })
	rcv.eachOnce(t, 400)
}

// TestNoClaimsWhileAnOlderWorkerRuns: a worker of an older version claims
// by leasing rows and knows nothing of shards; while one is alive (its
// heartbeat without a claim protocol, its liveness lock held) a worker of
// this version claims nothing, so the two never send the same delivery.
// Once it stops, delivery starts.
func TestNoClaimsWhileAnOlderWorkerRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	ctx := context.Background()
	const oldKey = 424242
	if _, err := e.pool.Exec(ctx, `INSERT INTO worker_heartbeats (worker_id, lock_key) VALUES ('older', $1)`, oldKey); err != nil {
		t.Fatal(err)
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", oldKey); err != nil {
		t.Fatal(err)
	}
	e.events(3, "order.created", `{}`)
	w := e.worker(nil)
	e.run(w)
	e.waitFor("the older worker seen", func() bool {
		w.live.own.mu.Lock()
		defer w.live.own.mu.Unlock()
		return w.live.own.older && w.live.own.held.count() == shardCount // it takes the shard locks all the same
	})
	if _, err := w.claims.claim(ctx, 10, nil); err != errNoShards {
		t.Fatalf("claim beside an older worker: %v, want errNoShards", err)
	}
	if n := w.claims.claimedRows.Load(); n != 0 || rcv.count.Load() != 0 {
		t.Fatalf("claimed %d deliveries beside an older worker", n)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", oldKey); err != nil {
		t.Fatal(err)
	}
	e.waitFor("delivered once the older worker is gone", func() bool { return rcv.count.Load() == 3 })
}

// TestHungWorkerLosesItsShards: a worker that holds its liveness lock and
// its shards but has stopped writing heartbeats (its process hung, its
// machine froze, its connection still open) would keep its endpoints from
// every other worker for good. After hungAfter without a heartbeat the
// others end its session, which frees its shards; a worker whose heartbeat
// is fresh is left alone however long it holds its shards.
func TestHungWorkerLosesItsShards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	// Two sessions standing for workers: one hung (its last heartbeat two
	// minutes old), one alive (a fresh heartbeat), each holding its
	// liveness lock and half the shards.
	session := func(id string, key int64, seen string, shards []int32) *pgxpool.Conn {
		t.Helper()
		conn, err := e.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Conn().Close(context.Background()); conn.Release() })
		if _, err := e.pool.Exec(ctx, `INSERT INTO worker_heartbeats (worker_id, lock_key, claim_protocol, last_seen_at)
			VALUES ($1, $2, 2, now() - $3::interval)`, id, key, seen); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
			t.Fatal(err)
		}
		if got, err := db.New(conn).ShardLockTry(ctx, db.ShardLockTryParams{Shards: shards, Class: shardLockClass}); err != nil || len(got) != len(shards) {
			t.Fatalf("%s took %d of %d shards: %v", id, len(got), len(shards), err)
		}
		return conn
	}
	var even, odd []int32
	for s := range int32(shardCount) {
		if s%2 == 0 {
			even = append(even, s)
		} else {
			odd = append(odd, s)
		}
	}
	hung := session("hung", 1001, "2 minutes", even)
	hungPID := hung.Conn().PgConn().PID()
	fresh := session("fresh", 1002, "0 seconds", odd)
	freshPID := fresh.Conn().PgConn().PID()

	w := e.worker(func(c *Config) { c.WorkerID = "w" })
	e.alive(w)
	// The hung worker no longer counts as live, so its shards are divided
	// between w and the fresh one; w takes its part of them.
	mine := assignShards("w", []string{"fresh"})
	e.waitFor("w's part of the hung worker's shards", func() bool {
		owned := w.live.own.claimable()
		for _, s := range even {
			if mine[s] && !owned[s] {
				return false
			}
		}
		return true
	})
	if n := e.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", hungPID); n != 0 {
		t.Fatal("the hung worker's session is still open")
	}
	if n := e.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", freshPID); n != 1 {
		t.Fatal("the session of a worker with a fresh heartbeat was ended")
	}
	for _, s := range odd {
		if w.live.own.claimable()[s] {
			t.Fatalf("shard %d taken from a worker whose heartbeat is fresh", s)
		}
	}
}
