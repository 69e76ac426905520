package worker

import (
	"context"
	"errors"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
)

// Ownership. Endpoints are divided into shardCount shards by id (id %
// shardCount), and each shard is owned by one live worker at a time: the
// one whose liveness session holds the shard's advisory lock
// (ShardLockTry). Only the owner claims a shard's deliveries, and it claims
// them by reading them (DeliveryClaim writes nothing), on that same
// session. So:
//
//   - a claim runs only while its worker holds the locks: if the session
//     died, the claim fails with it, and no other worker can take the shard
//     until PostgreSQL has ended the session. Two workers never claim the
//     same delivery; a delivery can reach its partner twice only if its
//     worker died (or lost its session) with it in flight;
//   - the owner knows exactly what is in flight for each of its endpoints
//     (claimer.held), so max_in_flight, the rate limit and the breaker's one
//     probe hold across replicas without counting rows or splitting rates;
//   - a dead worker's shards are free the instant PostgreSQL sees its
//     session end, and the survivors take them at their next reconcile
//     (every livenessPing): its deliveries are still due in the table and
//     are claimed again at once. A slow worker keeps its session, and its
//     shards.
//
// Which worker should own which shard is rendezvous hashing over the live
// workers (assignShards): every worker computes the same assignment from
// the same list, and a worker joining or leaving moves only its share of
// the shards. A worker gives a shard up (ShardUnlock) once the assignment
// says it is another's and every delivery it holds of that shard has its
// result recorded, so ownership moves without overlap; the new owner, trying
// every livenessPing, takes it at once after. The list is read on every
// reconcile (WorkerOwnersLive), and a worker whose liveness lock is free
// drops out of it at once: its shards were freed with its session.
const (
	// shardCount is how many shards endpoints are divided into. Each is an
	// advisory lock held by one session, so it bounds the locks hookline
	// takes in PostgreSQL's lock table (whose default size is 64 locks a
	// connection, times max_connections); 256 spreads a few replicas
	// within a few percent of even.
	shardCount = 256
	// shardLockClass is the first key of every shard lock
	// (pg_advisory_lock(class, shard)); hookline's other advisory locks
	// use single bigint keys, which never meet two-key locks.
	shardLockClass = 7270737
)

// shardOf is the shard of an endpoint; DeliveryClaim computes the same in
// SQL (id % the length of the shard array it is given).
func shardOf(endpointID int64) int { return int(endpointID % shardCount) }

// shardSet is a set of shards, indexed by shard.
type shardSet [shardCount]bool

func (s shardSet) count() int {
	n := 0
	for _, in := range s {
		if in {
			n++
		}
	}
	return n
}

// assignShards returns the shards self should own when self and others
// (worker ids, self not among them) are the live workers: for each shard,
// the worker with the highest hash of (worker, shard) (rendezvous hashing).
// Every worker computes the same assignment from the same list, and a
// worker joining or leaving moves only the shards it wins or held.
func assignShards(self string, others []string) shardSet {
	var mine shardSet
	keys := make([]uint64, len(others))
	for i, o := range others {
		keys[i] = workerHash(o)
	}
	me := workerHash(self)
	for s := range shardCount {
		best, bestID := shardScore(me, s), self
		for i, k := range keys {
			if sc := shardScore(k, s); sc > best || (sc == best && others[i] > bestID) {
				best, bestID = sc, others[i]
			}
		}
		mine[s] = bestID == self
	}
	return mine
}

func workerHash(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// shardScore mixes a worker's hash with a shard (the splitmix64 finaliser),
// so that each shard ranks the workers independently.
func shardScore(worker uint64, shard int) uint64 {
	z := worker ^ (uint64(shard)+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// ownership is this worker's side of it: the liveness session, the shard
// locks held on it, and the state the claim reads. mu serialises every
// statement on the session (pgx connections are not safe for concurrent
// use): the claim loop's claims, the probes' claims and the reconcile.
type ownership struct {
	mu   sync.Mutex
	conn *pgx.Conn // the liveness session while it holds the liveness lock; nil otherwise
	// held are the shard locks held on conn; leaving those the assignment
	// gives to another worker: no longer claimed, given up once drained.
	held, leaving shardSet
	// older: a worker of the older claim protocol (it leases rows) is
	// alive. Nothing is claimed until it is gone.
	older    bool
	draining bool // this worker is stopping: it gives every shard up
	// beat is when the session last wrote this worker's heartbeat, and
	// beatDraining what it said of draining.
	beat         time.Time
	beatDraining bool
	// everything: this worker may claim from every shard (held, none
	// leaving, no older worker alive), as of the last reconcile. Read
	// without mu (Worker.ClaimsEverything), so an ingest never waits
	// behind a claim for it.
	everything atomic.Bool
}

var (
	// errNoSession: the liveness session is down (reconnecting).
	errNoSession = errors.New("no liveness session")
	// errNoShards: this worker owns no shard it may claim from now.
	errNoShards = errors.New("no shard owned")
)

// withSession runs fn on the liveness session with the shards this worker
// may claim from (nil when it may claim from all), under the session's
// lock: no reconcile gives a shard up while fn runs.
func (o *ownership) withSession(fn func(conn *pgx.Conn, shards []bool) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil {
		return errNoSession
	}
	if o.older {
		return errNoShards
	}
	shards := make([]bool, shardCount)
	n := 0
	for s := range shardCount {
		if o.held[s] && !o.leaving[s] {
			shards[s] = true
			n++
		}
	}
	switch n {
	case 0:
		return errNoShards
	case shardCount:
		shards = nil
	}
	return fn(o.conn, shards)
}

// claimable is a copy of the shards this worker may claim from now.
func (o *ownership) claimable() shardSet {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s shardSet
	if o.conn == nil || o.older {
		return s
	}
	for i := range shardCount {
		s[i] = o.held[i] && !o.leaving[i]
	}
	return s
}

// attach makes conn, which holds the liveness lock, the session claims run
// on; detach forgets it (its locks end with it).
func (o *ownership) attach(conn *pgx.Conn) {
	o.mu.Lock()
	o.conn, o.held, o.leaving, o.beat = conn, shardSet{}, shardSet{}, time.Time{}
	o.everything.Store(false)
	o.mu.Unlock()
}

func (o *ownership) detach() {
	o.mu.Lock()
	o.conn, o.held, o.leaving = nil, shardSet{}, shardSet{}
	o.everything.Store(false)
	o.mu.Unlock()
}

// drain makes this worker give every shard up as its deliveries are
// recorded (shutdown).
func (o *ownership) drain() {
	o.mu.Lock()
	o.draining = true
	o.mu.Unlock()
}

// reconcile brings the shard locks held on the liveness session in line
// with the assignment over the live workers: shards assigned elsewhere stop
// being claimed at once and are given up once every delivery this worker
// holds of them is recorded; shards assigned here and free are taken. It
// reports whether this worker may claim from more shards than before (the
// claim loop should look everywhere). An error means the session is
// unusable.
func (l *liveness) reconcile(ctx context.Context) (gained bool, err error) {
	o := &l.own
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil {
		return false, errNoSession
	}
	q := db.New(o.conn)
	if time.Since(o.beat) >= heartbeatEvery || o.draining != o.beatDraining {
		if err := l.heartbeat(ctx, q, o.draining); err != nil {
			return false, err
		}
		o.beat, o.beatDraining = time.Now(), o.draining
		// Liveness is in real time: heartbeats and their age use the
		// database's clock (Now nil) even under a test's injected one,
		// which jumps.
		hung, err := q.WorkerTerminateHung(ctx, db.WorkerTerminateHungParams{WorkerID: l.id, HungAfterSeconds: hungAfter.Seconds()})
		if err != nil {
			return false, err
		}
		if len(hung) > 0 {
			l.log.Warn("ended the sessions of workers that held their liveness lock without a heartbeat: hung; their shards are free", "workers", hung, "after", hungAfter)
		}
	}
	live, err := q.WorkerOwnersLive(ctx, db.WorkerOwnersLiveParams{WorkerID: l.id, LiveForSeconds: replicaLiveFor.Seconds()})
	if err != nil {
		return false, err
	}
	older := false
	others := make([]string, 0, len(live))
	for _, r := range live {
		switch {
		case r.ClaimProtocol == nil:
			older = true
		case !r.Draining:
			others = append(others, r.WorkerID)
		}
	}
	var want shardSet
	if !o.draining {
		want = assignShards(l.id, others)
	}
	before := 0
	if !o.older {
		for s := range shardCount {
			if o.held[s] && !o.leaving[s] {
				before++
			}
		}
	}
	var give, take []int32
	for s := range shardCount {
		switch {
		case o.held[s] && !want[s]:
			o.leaving[s] = true
			if l.held.inShard(s) == 0 {
				give = append(give, int32(s))
			}
		case o.held[s]:
			o.leaving[s] = false
		case want[s]:
			take = append(take, int32(s))
		}
	}
	if len(give) > 0 {
		if err := q.ShardUnlock(ctx, db.ShardUnlockParams{Shards: give, Class: shardLockClass}); err != nil {
			return false, err
		}
		for _, s := range give {
			o.held[s], o.leaving[s] = false, false
		}
	}
	if len(take) > 0 {
		got, err := q.ShardLockTry(ctx, db.ShardLockTryParams{Shards: take, Class: shardLockClass})
		if err != nil {
			return false, err
		}
		for _, s := range got {
			o.held[s] = true
		}
	}
	if older != o.older {
		if older {
			l.log.Warn("a worker of an older version is running: claiming nothing until it stops (it claims by leasing rows, this version by shard ownership)")
		} else {
			l.log.Info("no worker of an older version is running: claiming")
		}
		o.older = older
	}
	after := 0
	if !o.older {
		for s := range shardCount {
			if o.held[s] && !o.leaving[s] {
				after++
			}
		}
	}
	o.everything.Store(after == shardCount)
	l.metrics.observeShards(after)
	return after > before, nil
}

// holdSession runs the reconcile on conn every livenessPing until ctx ends
// or the session fails; conn already holds the liveness lock.
func (l *liveness) holdSession(ctx context.Context, conn *pgx.Conn) error {
	l.own.attach(conn)
	defer l.own.detach()
	tick := time.NewTicker(livenessPing)
	defer tick.Stop()
	for {
		gained, err := l.reconcile(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if gained {
			l.wakeEverywhere()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// heartbeat records this replica as alive, with what it holds in flight
// (the pipeline summary reads it) and whether it is stopping. The session
// loop writes it (reconcile), so a heartbeat that stops coming means the
// loop that keeps the shards has stopped (WorkerTerminateHung).
func (l *liveness) heartbeat(ctx context.Context, q *db.Queries, draining bool) error {
	host, _ := os.Hostname()
	n, retries := l.held.counts()
	return q.WorkerHeartbeat(ctx, db.WorkerHeartbeatParams{WorkerID: l.id, Hostname: host, LockKey: l.lockKey.Load(), // the database's clock: see reconcile
		InFlight: int32(n), InFlightRetries: int32(retries), Draining: draining})
}
