package worker

import (
	"context"
	"time"

	"github.com/hookline/hookline/db"
)

// claimed is a delivery this worker holds a lease on.
type claimed = db.DeliveryClaimRow

// claimLoop claims due deliveries whenever there is room for more sends,
// until ctx ends. It wakes on NOTIFY, on a finished send, and on the poll
// interval; after a full batch it claims again at once, since more work is
// probably due.
func (w *Worker) claimLoop(ctx, sendCtx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	failures := 0
	// Claiming a handful of rows costs nearly as much as claiming hundreds,
	// so under load the loop waits until a quarter of the slots are free.
	minClaim := max(1, min(w.cfg.ClaimBatch, w.cfg.Concurrency)/4)
	for {
		busy := int(w.busy.Load())
		room := w.cfg.Concurrency - busy
		full := false
		if room >= minClaim || (room > 0 && busy == 0) {
			n := min(room, w.cfg.ClaimBatch)
			rows, err := w.claim(ctx, n)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				failures++
				if failures == 1 || failures%60 == 0 {
					w.log.Error("claim deliveries", "err", err, "consecutive_failures", failures)
				}
			default:
				failures = 0
				for i := range rows {
					w.dispatch(sendCtx, rows[i])
				}
				full = len(rows) == n
			}
		}
		if full && ctx.Err() == nil {
			continue
		}
		wait := w.cfg.PollInterval
		if failures > 0 {
			wait = min(time.Duration(failures)*time.Second, 10*time.Second)
		} else if w.capped.Load() {
			// Tokens refill continuously; look again soon rather than
			// waiting a whole poll interval.
			wait = min(wait, 100*time.Millisecond)
		}
		poll.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-w.freed:
		case <-poll.C:
		}
	}
}

// claim takes up to n due deliveries, within each endpoint's in-flight cap
// and this replica's rate-limit tokens.
func (w *Worker) claim(ctx context.Context, n int) ([]claimed, error) {
	now := w.now()
	ids, caps := w.limits.Snapshot(now)
	w.capped.Store(len(ids) > 0)
	start := time.Now()
	rows, err := w.claimRows(ctx, db.DeliveryClaimParams{
		Now:           w.dbNow(),
		LeaseMarginMs: int32(w.cfg.LeaseMargin / time.Millisecond),
		WorkerID:      w.id,
		CappedIds:     ids,
		Caps:          caps,
		MaxRows:       int32(n),
	})
	w.metrics.observeClaim(time.Since(start), len(rows), err)
	w.log.Debug("claim", "rows", len(rows), "asked", n, "ms", time.Since(start).Milliseconds())
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 && len(rows) > 0 {
		taken := map[int64]int{}
		for i := range rows {
			taken[rows[i].EndpointID]++
		}
		for id, k := range taken {
			w.limits.Take(id, k, now)
		}
	}
	return rows, nil
}

// claimRows runs the claim as one pipeline (one round trip, one implicit
// transaction): its settings (asynchronous commit, a cached plan), the
// cross-replica claim lock, then the claim itself in a new statement that
// sees every claim committed before the lock was granted.
func (w *Worker) claimRows(ctx context.Context, arg db.DeliveryClaimParams) ([]claimed, error) {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	q := db.New(&pipeline{conn: conn})
	_ = q.ClaimSettings(ctx) // queued: errors surface from the claim
	_ = q.ClaimLock(ctx)
	return q.DeliveryClaim(ctx, arg)
}

// dispatch sends one claimed delivery on its own goroutine; the result goes
// to the completer. The goroutine is owned by Run through w.inflight.
func (w *Worker) dispatch(ctx context.Context, d claimed) {
	w.busy.Add(1)
	w.inflight.Add(1)
	go func() {
		defer w.inflight.Done()
		o := w.deliver(ctx, d)
		w.results <- o
		w.busy.Add(-1)
		signal(w.freed)
	}()
}
