package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

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

// holdLiveness takes this worker's liveness lock and keeps its connection
// open until ctx ends, reconnecting when the connection breaks. ready is
// closed once the lock is first held. Owned by Run; it exits when ctx (which
// outlives the worker's shutdown, so in-flight sends stay protected) ends.
func (w *Worker) holdLiveness(ctx context.Context, ready chan<- struct{}) {
	readyOnce := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	for ctx.Err() == nil {
		err := w.holdLivenessOnce(ctx, readyOnce)
		w.alive.Store(false)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("liveness lock lost: not claiming until it is held again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *Worker) holdLivenessOnce(ctx context.Context, held func()) error {
	conn, err := pgx.ConnectConfig(ctx, w.session.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	// Closing the session is what releases the lock.
	defer conn.Close(context.WithoutCancel(ctx))
	q := db.New(conn)
	for tries := 1; ; tries++ {
		ok, err := q.WorkerLockHold(ctx, w.lockKey.Load())
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
			w.lockKey.Store(newLockKey())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	w.alive.Store(true)
	held()
	w.wakeEverywhere() // the claim loop may have skipped claims meanwhile
	// The same session holds the shard locks and runs the claims
	// (ownership.go); its reconcile every livenessPing is also the check
	// that the session is alive.
	return w.holdSession(ctx, conn)
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
// runs on the maintenance goroutine, which owns w.suspects.
func (w *Worker) reapDead(ctx context.Context) error {
	if !w.alive.Load() {
		return nil // without our own lock we may be the one cut off
	}
	ids, err := w.q.WorkerFindDead(ctx, w.id)
	if err != nil {
		return err
	}
	now := time.Now()
	var confirmed []string
	free := make(map[string]bool, len(ids))
	for _, id := range ids {
		free[id] = true
		first, seen := w.suspects[id]
		switch {
		case !seen:
			w.suspects[id] = now
		case now.Sub(first) >= deadConfirm:
			confirmed = append(confirmed, id)
		}
	}
	for id := range w.suspects {
		if !free[id] {
			delete(w.suspects, id) // it holds its lock again
		}
	}
	if len(confirmed) == 0 {
		return nil
	}
	n, err := w.rescue(ctx, confirmed...)
	if err != nil {
		return err
	}
	if err := w.q.WorkerHeartbeatForget(ctx, confirmed); err != nil {
		return errors.Join(errors.New("forget dead workers"), err)
	}
	for _, id := range confirmed {
		delete(w.suspects, id)
	}
	w.log.Warn("rescued the deliveries of dead workers", "workers", len(confirmed), "count", n)
	if n > 0 {
		w.wakeEverywhere()
	}
	return nil
}
