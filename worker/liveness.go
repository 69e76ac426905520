package worker

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
)

// Liveness: each worker holds a session-level advisory lock on a random key
// for as long as it runs, on a connection of its own, and publishes the key
// in its heartbeat row. PostgreSQL drops the lock the instant that session
// ends, whether the process was killed or its connection died, so another
// replica (or this worker's successor after a restart) can tell a dead
// worker from a slow one without waiting for anything to expire: a slow
// worker (long sends, a GC pause, an overloaded machine) still holds its
// lock. The same session holds the worker's shard locks and runs its claims
// (ownership.go), so a dead worker's shards are free, and its deliveries
// claimed again, within about a reconcile. Leases remain for breaker
// probes, and for rows leased by workers of an older version: a dead
// worker's are rescued once its lock has been seen free twice.
const (
	// livenessPing is how often the lock's session reconciles the shards
	// it owns (which also checks that it is alive); a broken one stops this
	// worker's claims until the lock is held again.
	livenessPing = 250 * time.Millisecond
	// reapEvery is how often other workers' locks are checked.
	reapEvery = 250 * time.Millisecond
	// deadConfirm is how long a worker's lock must stay free, seen by two
	// checks, before its leases are rescued. It covers the moment after a
	// PostgreSQL restart when every session is new and live workers are
	// still taking their locks again.
	deadConfirm = 500 * time.Millisecond
)

// livenessConfig configures a liveness service; validate says what is
// missing.
type livenessConfig struct {
	// Pool runs the look for dead workers; SessionPool is where the
	// liveness session is opened (a connection that keeps its server
	// session: it holds the advisory locks and runs the claims).
	Pool        *pgxpool.Pool
	SessionPool *pgxpool.Pool
	WorkerID    string
	// Held is what the worker has claimed and not yet recorded: the
	// heartbeat counts it, and a shard is given up only when none of it
	// is of that shard.
	Held *holdings
	// Rescue makes the leased deliveries of dead workers due again
	// (maintainer.rescue); WakeClaims tells the claim loop to look everywhere.
	Rescue     func(ctx context.Context, deadWorkers ...string) (int, error)
	WakeClaims func()
	Logger     *slog.Logger
	// Metrics receives the shard gauge; nil disables it.
	Metrics *Metrics
}

func (c livenessConfig) validate() error {
	switch {
	case c.Pool == nil, c.SessionPool == nil:
		return errors.New("liveness: Pool and SessionPool are required")
	case c.WorkerID == "":
		return errors.New("liveness: WorkerID is required")
	case c.Held == nil:
		return errors.New("liveness: Held is required")
	case c.Rescue == nil, c.WakeClaims == nil:
		return errors.New("liveness: Rescue and WakeClaims are required")
	case c.Logger == nil:
		return errors.New("liveness: Logger is required")
	}
	return nil
}

// liveness keeps this worker alive in the others' eyes and its shards
// its own: it holds the liveness session (the advisory lock, the
// heartbeat, the shard locks the claims run under: ownership.go), and it
// finds the workers that died and has their leases rescued (reapDead).
type liveness struct {
	cfg            livenessConfig
	session        *pgxpool.Pool
	q              *db.Queries
	id             string
	log            *slog.Logger
	metrics        *Metrics
	held           *holdings
	rescue         func(ctx context.Context, deadWorkers ...string) (int, error)
	wakeEverywhere func()

	// own is the shards this worker owns and the session it claims on.
	own ownership
	// The key of the advisory lock this worker holds while it runs,
	// whether it holds it now (claims wait while it does not), and the
	// other workers seen without theirs, since when (owned by the
	// goroutine that runs reapDead).
	lockKey  atomic.Int64
	alive    atomic.Bool
	suspects map[string]time.Time
}

func newLiveness(cfg livenessConfig) (*liveness, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &liveness{cfg: cfg, session: cfg.SessionPool, q: db.New(cfg.Pool), id: cfg.WorkerID,
		log: cfg.Logger, metrics: cfg.Metrics, held: cfg.Held, rescue: cfg.Rescue,
		wakeEverywhere: cfg.WakeClaims, suspects: map[string]time.Time{}}
	l.lockKey.Store(newLockKey())
	return l, nil
}

// Run holds the liveness session until ctx ends (holdLiveness); ready is
// closed once the lock is first held.
func (l *liveness) Run(ctx context.Context, ready chan<- struct{}) { l.holdLiveness(ctx, ready) }

// RunOnce looks once for dead workers, and rescues the leases of those
// seen dead long enough (tests; the maintenance loop calls it every tick).
func (l *liveness) RunOnce(ctx context.Context) error { return l.reapDead(ctx) }

// holdLiveness takes this worker's liveness lock and keeps its connection
// open until ctx ends, reconnecting when the connection breaks. ready is
// closed once the lock is first held. Owned by Run; it exits when ctx (which
// outlives the worker's shutdown, so in-flight sends stay protected) ends.
func (l *liveness) holdLiveness(ctx context.Context, ready chan<- struct{}) {
	readyOnce := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	for ctx.Err() == nil {
		err := l.holdLivenessOnce(ctx, readyOnce)
		l.alive.Store(false)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("liveness lock lost: not claiming until it is held again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *liveness) holdLivenessOnce(ctx context.Context, held func()) error {
	conn, err := pgx.ConnectConfig(ctx, l.session.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	// Closing the session is what releases the lock.
	defer conn.Close(context.WithoutCancel(ctx))
	q := db.New(conn)
	for tries := 1; ; tries++ {
		ok, err := q.WorkerLockHold(ctx, l.lockKey.Load())
		if err != nil {
			return err
		}
		if ok {
			break
		}
		// Another session has the key: a replica checking whether this
		// worker is dead holds it for one statement, so try again. Held
		// for a whole second it is another live worker's random key (about
		// one chance in 2^63): pick a new one.
		if tries%20 == 0 {
			l.lockKey.Store(newLockKey())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	l.alive.Store(true)
	held()
	l.wakeEverywhere() // the claim loop may have skipped claims meanwhile
	// The same session holds the shard locks and runs the claims
	// (ownership.go); its reconcile every livenessPing is also the check
	// that the session is alive.
	return l.holdSession(ctx, conn)
}

// newLockKey picks a random non-zero liveness key.
func newLockKey() int64 {
	for {
		if k := rand.Int64(); k != 0 {
			return k
		}
	}
}

// reapDead rescues the leases of workers whose liveness lock has been free
// for deadConfirm (two checks at least), and forgets their heartbeats. It
// runs on the maintenance goroutine, which owns l.suspects (RunOnce).
func (l *liveness) reapDead(ctx context.Context) error {
	if !l.alive.Load() {
		return nil // without our own lock we may be the one cut off
	}
	ids, err := l.q.WorkerFindDead(ctx, l.id)
	if err != nil {
		return err
	}
	now := time.Now()
	var confirmed []string
	free := make(map[string]bool, len(ids))
	for _, id := range ids {
		free[id] = true
		first, seen := l.suspects[id]
		switch {
		case !seen:
			l.suspects[id] = now
		case now.Sub(first) >= deadConfirm:
			confirmed = append(confirmed, id)
		}
	}
	for id := range l.suspects {
		if !free[id] {
			delete(l.suspects, id) // it holds its lock again
		}
	}
	if len(confirmed) == 0 {
		return nil
	}
	n, err := l.rescue(ctx, confirmed...)
	if err != nil {
		return err
	}
	if err := l.q.WorkerHeartbeatForget(ctx, confirmed); err != nil {
		return errors.Join(errors.New("forget dead workers"), err)
	}
	for _, id := range confirmed {
		delete(l.suspects, id)
	}
	l.log.Warn("rescued the deliveries of dead workers", "workers", len(confirmed), "count", n)
	if n > 0 {
		l.wakeEverywhere()
	}
	return nil
}
