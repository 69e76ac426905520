package bench

import (
	"context"
	"fmt"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/ssrf"
)

// warmUp drains a small queue with hookline's worker, untimed, and empties
// the tables again. The first phase on a fresh cluster pays for what later
// ones find ready: new WAL segment files, cold caches, first plans. Run
// first, the bare worker spent 68-71 µs of PostgreSQL CPU per delivery
// against 46-60 µs when it ran after hookline's worker; the phases measured
// here should all find the database as a running service does.
func warmUp(ctx context.Context, pool *pgxpool.Pool, key []byte, guard *ssrf.Guard, rcv *receiver, o Options, payload []byte) error {
	w := o
	w.Deliveries = max(o.Endpoints, min(o.Deliveries/4, 5000))
	w.Deliveries -= w.Deliveries % o.Endpoints
	w.CPUProfile = nil
	if _, err := queue(ctx, pool, w, payload); err != nil {
		return err
	}
	if _, err := runWorker(ctx, pool, key, guard, rcv, w, func() {}); err != nil {
		return err
	}
	return reset(ctx, pool)
}

func reset(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "TRUNCATE events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "UPDATE endpoint_health SET state = 'closed', consecutive_failures = 0")
	return err
}

func remaining(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE status <> 'delivered'").Scan(&n)
	return n, err
}

// runWorker drains the queue with the real worker and times it from start
// until no undelivered row is left, and calls end then, before it stops
// the worker.
func runWorker(ctx context.Context, pool *pgxpool.Pool, key []byte, guard *ssrf.Guard, rcv *receiver, o Options, end func()) (Phase, error) {
	target := rcv.count.Load() + int64(o.Deliveries)
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return Phase{}, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	w, err := startWorker(ctx, worker.Config{
		Pool: pool, SecretKey: key, Guard: guard,
		Concurrency: o.Concurrency, Logger: o.Logger, Sender: o.sender,
	})
	if err != nil {
		return Phase{}, err
	}
	defer w.stop()
	for {
		// Counting rows costs the database; only once every request has
		// arrived is it worth asking whether all results are recorded.
		if rcv.count.Load() >= target {
			n, err := remaining(ctx, pool)
			if err != nil {
				return Phase{}, err
			}
			if n == 0 {
				p := Phase{Count: o.Deliveries, Duration: time.Since(start)}
				end() // before the deferred stop closes the worker's sessions
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return Phase{}, ctx.Err()
		case <-w.exited:
			return Phase{}, fmt.Errorf("worker stopped: %v", w.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
