package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/sender"
)

// flush records one batch in one transaction: delivery state (one UPDATE
// over arrays), attempts, latency samples, breaker transitions and
// Retry-After pauses, and endpoints disabled by 410 Gone. Its steps, in
// the order they run, are the methods below it.
//
// It costs two round trips when no breaker, budget or endpoint changes
// (nearly every batch): BEGIN, the health rows' read and the deliveries'
// update in one (db.Statements through db.TxPipeline), the attempts, the
// latency samples and COMMIT in the other. A batch that changes health
// rows locks and writes them in round trips of its own before COMMIT. At
// a steady rate a batch closes every few milliseconds with a handful of
// results, and each round trip is a wake-up of PostgreSQL's backend and of
// this process: recorded one statement at a time (BEGIN, update, COPY of
// the attempts in two, latency, health read, COMMIT) a batch took seven
// (worker/bench/performance.md, "The completion in two round trips").
func (c *completer) flush(ctx context.Context, batch []outcome) error {
	b := c.decideStates(batch)

	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx := db.NewTxPipeline(conn)
	defer tx.Rollback(ctx)

	// First round trip: the health rows of every endpoint the batch may
	// change (read without locks, see applyBreaker), then the update.
	c.readHealth(ctx, b)
	c.completeDeliveries(ctx, b)
	if err := b.s.Send(ctx, tx); err != nil {
		return err
	}

	// Second: attempts and latency samples, then COMMIT, with the health
	// changes' round trips between them when there are any.
	if err := c.insertAttempts(ctx, b); err != nil {
		return err
	}
	changed := c.healthChanges(b.health, batch, b.applied)
	if len(changed) == 0 && len(b.release.Ids) == 0 && len(b.gone) == 0 {
		err = c.commitAttempts(ctx, tx, b)
	} else {
		err = c.commitWithHealth(ctx, tx, b, changed)
	}
	if err != nil {
		return err
	}
	c.afterCommit(b)
	return nil
}

// completion is one batch on its way through flush's steps.
type completion struct {
	batch   []outcome
	done    db.DeliveryCompleteParams // the results to record, as DeliveryComplete's arrays
	release db.DeliveryReleaseParams  // leased probes a shutdown cut short
	gone    map[int64]string          // endpoints that answered 410, and why they are disabled
	s       db.Statements             // the statements of the round trip being built
	health  []db.EndpointHealthReadRow
	applied map[int64]bool // deliveries whose result the fence let through
	notes   notices
}

// decideStates decides what each result makes of its delivery (nextState)
// and lays the batch out as DeliveryComplete's arrays; a send cut short
// by shutdown is left out, and a leased probe among those is to be
// released.
func (c *completer) decideStates(batch []outcome) *completion {
	now := c.now()
	b := &completion{batch: batch, gone: map[int64]string{}, applied: map[int64]bool{}}
	b.release.WorkerID, b.release.Now = c.cfg.WorkerID, c.dbNow()
	done := &b.done
	for i := range batch {
		o := &batch[i]
		d, r := &o.d, &o.res
		if r.ErrorClass == sender.ClassCanceled {
			// Shutdown cut the send short: back to the queue without using
			// an attempt. A delivery claimed by reading is still waiting
			// there, as it was; only a leased probe has a lease to undo.
			if o.leased {
				b.release.Ids = append(b.release.Ids, d.ID)
				b.release.AttemptCounts = append(b.release.AttemptCounts, d.AttemptCount)
			}
			continue
		}
		status, next := c.nextState(o, d.AttemptCount+1, now)
		o.dead = status == "dead"
		done.Ids = append(done.Ids, d.ID)
		done.AttemptCounts = append(done.AttemptCounts, d.AttemptCount)
		owner := ""
		if o.leased {
			owner = c.cfg.WorkerID
		}
		done.Owners = append(done.Owners, owner)
		done.Statuses = append(done.Statuses, status)
		done.NextAttemptAts = append(done.NextAttemptAts, next)
		done.FinishedAts = append(done.FinishedAts, o.ended())
		done.Errors = append(done.Errors, r.Error)
		done.ErrorClasses = append(done.ErrorClasses, r.ErrorClass)
		done.StatusCodes = append(done.StatusCodes, int32(r.StatusCode))
		done.DurationsMs = append(done.DurationsMs, float64(r.Duration)/float64(time.Millisecond))
		if r.Outcome == sender.Gone {
			b.gone[d.EndpointID] = fmt.Sprintf("the partner answered 410 Gone at %s; re-enable after fixing the URL", o.finished.UTC().Format(time.RFC3339))
		}
	}
	return b
}

// readHealth queues the read, without locks, of the health rows of every
// endpoint the batch may change (breakerCandidates).
func (c *completer) readHealth(ctx context.Context, b *completion) {
	ids := breakerCandidates(b.batch)
	if len(ids) == 0 {
		return
	}
	b.s.Query(func(q *db.Queries) { _, _ = q.EndpointHealthRead(ctx, ids) }, func(r pgx.Rows) (err error) {
		if b.health, err = pgx.CollectRows(r, pgx.RowToStructByPos[db.EndpointHealthReadRow]); err != nil {
			return fmt.Errorf("read endpoint health: %w", err)
		}
		return nil
	})
}

// completeDeliveries queues the fenced update of the batch's deliveries
// (DeliveryComplete); the ids it returns are the results applied.
func (c *completer) completeDeliveries(ctx context.Context, b *completion) {
	if len(b.done.Ids) == 0 {
		return
	}
	b.s.Query(func(q *db.Queries) { _, _ = q.DeliveryComplete(ctx, b.done) }, func(r pgx.Rows) error {
		ids, err := pgx.CollectRows(r, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("complete deliveries: %w", err)
		}
		for _, id := range ids {
			b.applied[id] = true
		}
		return nil
	})
}

// insertAttempts queues the attempts and latency samples of the
// deliveries just updated, only those. A stale result (another worker
// took the delivery over and recorded an attempt, or rescue recorded a
// lost probe as lease_expired) adds nothing, and a batch retried after a
// commit whose answer was lost (the first try did commit) writes no second
// copy: the fence matches no row the second time. Latency samples commit
// with their attempts, so a crash before the next histogram flush loses
// none of them.
func (c *completer) insertAttempts(ctx context.Context, b *completion) error {
	if rows := attemptRows(b.batch, b.applied); len(rows.DeliveryIds) > 0 {
		b.s.Exec(func(q *db.Queries) { _ = q.AttemptInsertRows(ctx, rows) })
	}
	lat, err := batchLatency(b.batch, b.applied)
	if err != nil {
		return err
	}
	if lat != nil {
		b.s.Exec(func(q *db.Queries) { _ = q.LatencyPendingInsert(ctx, *lat) })
	}
	return nil
}

// commitAttempts sends the attempts with COMMIT, in one round trip: the
// batch changes no health row, releases no probe and disables no
// endpoint (nearly every batch).
func (c *completer) commitAttempts(ctx context.Context, tx *db.TxPipeline, b *completion) error {
	if b.s.Len() == 0 { // every result stale: nothing to write
		return tx.Commit(ctx)
	}
	tx.CommitWithNextBatch()
	if err := b.s.Send(ctx, tx); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	return nil
}

// commitWithHealth sends the attempts, then releases the probes a
// shutdown cut short (DeliveryRelease), applies the breakers' and budgets'
// changes (applyBreaker), disables the endpoints that answered 410
// (disableGone), queues the notifications these caused, and commits.
func (c *completer) commitWithHealth(ctx context.Context, tx *db.TxPipeline, b *completion, changed []int64) error {
	if err := b.s.Send(ctx, tx); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	q := db.New(tx)
	if len(b.release.Ids) > 0 {
		if err := q.DeliveryRelease(ctx, b.release); err != nil {
			return fmt.Errorf("release deliveries: %w", err)
		}
	}
	if err := c.applyBreaker(ctx, q, changed, b.batch, b.applied, &b.notes); err != nil {
		return err
	}
	if err := c.disableGone(ctx, q, b); err != nil {
		return err
	}
	if err := b.notes.insert(ctx, q, c.dbNow()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// disableGone disables the endpoints that answered 410 Gone, each with a
// notification when this disabled it.
func (c *completer) disableGone(ctx context.Context, q *db.Queries, b *completion) error {
	for id, reason := range b.gone {
		n, err := q.EndpointDisable(ctx, db.EndpointDisableParams{ID: id, Reason: reason, Cause: "gone", Now: c.dbNow()})
		if err != nil {
			return fmt.Errorf("disable endpoint: %w", err)
		}
		if n > 0 {
			b.notes.add(notify.EndpointDisabled, id, "gone", map[string]any{"reason": reason})
		}
	}
	return nil
}

// afterCommit wakes the notifier when the batch queued notifications, and
// applies Retry-After pauses and counts metrics, only after commit and
// only for what this commit recorded, so neither a retried batch nor a
// stale result is counted twice.
func (c *completer) afterCommit(b *completion) {
	if len(b.notes.kinds) > 0 {
		signal(c.cfg.Outbox)
	}
	for i := range b.batch {
		o := &b.batch[i]
		if o.res.ErrorClass == sender.ClassCanceled {
			continue
		}
		if o.res.RetryAfter > 0 {
			c.cfg.Pause(o.d.EndpointID, o.finished.Add(min(o.res.RetryAfter, backoff.RetryAfterCap)))
		}
		if !b.applied[o.d.ID] {
			c.log.Warn("result not recorded: the delivery has moved on (another worker took it over with its shard, rescue took a probe's lease, or an earlier try of this batch recorded it)", "delivery_id", o.d.ID)
			continue
		}
		c.metrics.observeOutcome(o)
	}
}
