package worker

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/sender"
)

// claimed is a delivery this worker claimed: it holds it (w.held) until its
// result is recorded.
type claimed = db.DeliveryClaimRow

// claimLoop claims due deliveries whenever there is room for them, until
// ctx ends, and queues them for the senders. It wakes on NOTIFY, on a
// finished send, and on the poll interval; after a full batch it claims
// again at once, since more work is probably due.
//
// Where it looks is w.hints: the endpoints a NOTIFY or a recorded
// completion named, or every endpoint. It looks everywhere at least once
// per poll interval (every 100 ms while rate limits hold deliveries back),
// however busy the wake-ups keep it, so a retry or a pause that comes due
// waits at most that long.
//
// Room is the send slots plus the local queue (see Worker.queue): claiming
// while every sender is still busy means a sender that finishes starts its
// next delivery at once instead of idling through a claim's round trip.
// With partners that take 20 ms to answer that is about a fifth more
// deliveries per second from the same concurrency.
func (w *Worker) claimLoop(ctx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	failures := 0
	capacity := w.cfg.Concurrency + cap(w.queue)
	// Claiming a handful of rows costs nearly as much as claiming hundreds,
	// so under load the loop waits until half the queue has drained.
	minClaim := max(1, cap(w.queue)/2)
	w.hints.all()
	var lookedEverywhere time.Time
	for {
		busy := int(w.busy.Load())
		room := capacity - busy
		full := false
		// Without its liveness lock this worker may already count as dead
		// to the others, who then own its shards: it claims nothing.
		if w.alive.Load() && (room >= minClaim || (room > 0 && busy == 0)) {
			ids, everywhere, asked := w.hints.take()
			every := w.cfg.PollInterval
			if w.capped.Load() {
				every = min(every, 100*time.Millisecond)
			}
			if time.Since(lookedEverywhere) >= every {
				ids, everywhere = nil, true
			}
			if !everywhere {
				ids = w.ownedOf(ids)
			}
			n := min(room, w.cfg.ClaimBatch)
			var rows []claimed
			var err error
			if everywhere || len(ids) > 0 {
				rows, err = w.claim(ctx, n, ids)
			}
			switch {
			case ctx.Err() != nil:
				return
			case !everywhere && len(ids) == 0:
				// Nothing was named since the last claim.
			case errors.Is(err, errNoShards), errors.Is(err, errNoSession):
				// Nothing to claim from until the reconcile takes a shard
				// (it wakes the loop when it does). Named endpoints wait
				// for the look everywhere that follows.
			case err != nil:
				failures++
				if failures == 1 || failures%60 == 0 {
					w.log.Error("claim deliveries", "err", err, "consecutive_failures", failures)
				}
				w.hints.add(ids...) // everywhere follows from the poll interval
			default:
				failures = 0
				w.claimedRows.Add(int64(len(rows)))
				if everywhere {
					lookedEverywhere = time.Now()
					w.lookedFor.Store(asked)
					w.claimPasses.Add(1)
				}
				at := time.Now()
				w.busy.Add(int64(len(rows)))
				for i := range rows {
					w.queue <- queued{d: rows[i], at: at} // room was checked: never blocks for long
				}
				// A full batch leaves more behind where it looked: look
				// there again at once.
				if full = len(rows) == n; full && everywhere {
					w.hints.all()
				} else if full {
					w.hints.add(ids...)
				}
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

// ownedOf keeps the endpoints of ids in shards this worker may claim from:
// every replica hears every wake-up NOTIFY, and a claim at another's
// endpoints would find nothing.
func (w *Worker) ownedOf(ids []int64) []int64 {
	if len(ids) == 0 {
		return ids
	}
	owned := w.own.claimable()
	kept := ids[:0]
	for _, id := range ids {
		if owned[shardOf(id)] {
			kept = append(kept, id)
		}
	}
	return kept
}

// claim takes up to n due deliveries of the endpoints ids (of every
// endpoint when ids is nil) in the shards this worker owns, within each
// endpoint's in-flight cap and this worker's rate-limit tokens, and holds
// them (w.held) until their results are recorded. It returns errNoShards
// when this worker owns no shard it may claim from.
func (w *Worker) claim(ctx context.Context, n int, ids []int64) ([]claimed, error) {
	now := w.now()
	capped, caps := w.limits.Snapshot(now)
	w.capped.Store(len(capped) > 0)
	start := time.Now()
	var rows []claimed
	err := w.own.withSession(func(conn *pgx.Conn, shards []bool) error {
		heldEndpoints, heldIDs := w.held.snapshot()
		var err error
		rows, err = claimRows(ctx, conn, db.DeliveryClaimParams{
			Now:             w.dbNow(),
			EndpointIds:     ids,
			Shards:          shards,
			HeldEndpointIds: heldEndpoints,
			HeldIds:         heldIDs,
			CappedIds:       capped,
			Caps:            caps,
			MaxRows:         int32(n),
		})
		if err == nil {
			w.held.add(rows) // before another claim can run on the session
		}
		return err
	})
	if errors.Is(err, errNoShards) || errors.Is(err, errNoSession) {
		return nil, err
	}
	w.metrics.observeClaim(time.Since(start), len(rows), err)
	w.traceClaim(start, n, ids == nil, rows, err)
	w.log.Debug("claim", "rows", len(rows), "asked", n, "ms", time.Since(start).Milliseconds())
	if err != nil {
		return nil, err
	}
	if len(capped) > 0 && len(rows) > 0 {
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
// transaction): its settings (a cached plan), then the claim itself.
func claimRows(ctx context.Context, conn *pgx.Conn, arg db.DeliveryClaimParams) ([]claimed, error) {
	q := db.New(db.NewPipeline(conn))
	_ = q.ClaimSettings(ctx) // queued: errors surface from the claim
	return q.DeliveryClaim(ctx, arg)
}

// queued is a claimed delivery waiting for a sender.
type queued struct {
	d  claimed
	at time.Time // when it was claimed (monotonic)
}

// sendLoop is one of Concurrency senders: it sends queued deliveries until
// the queue is closed. A delivery still queued when claiming has stopped
// (shutdown), or queued for half of LeaseMargin (every sender stuck on slow
// partners), is not sent and uses no attempt: it is left due (and no
// longer held), so a send never starts that late.
func (w *Worker) sendLoop(claimCtx, sendCtx context.Context) {
	for q := range w.queue {
		var o outcome
		if claimCtx.Err() != nil || time.Since(q.at) > w.cfg.LeaseMargin/2 {
			now := w.now()
			o = outcome{d: q.d, res: sender.Result{ErrorClass: sender.ClassCanceled, Started: now}, finished: now}
		} else {
			o = w.attempt(sendCtx, q.d)
		}
		w.results <- o
		w.busy.Add(-1)
		signal(w.freed)
	}
}

// dispatch sends one leased delivery (a breaker probe) on its own
// goroutine, outside the queue; the result goes to the completer. The
// goroutine is owned by Run through w.inflight.
func (w *Worker) dispatch(ctx context.Context, d claimed) {
	w.busy.Add(1)
	w.inflight.Add(1)
	go func() {
		defer w.inflight.Done()
		o := w.attempt(ctx, d)
		o.leased = true
		w.results <- o
		w.busy.Add(-1)
		signal(w.freed)
	}()
}
