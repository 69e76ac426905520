package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/sender"
)

// completer collects outcomes into batches of up to FlushSize, closed
// after FlushInterval, and hands them to Flushers goroutines, each
// recording one batch per transaction. With two or more, one batch's
// statements run while another waits for its commit to reach disk. Batches
// of different flushers touch different deliveries; they meet only on
// endpoint_health rows that change, which every writer locks in endpoint
// order (see applyBreaker). When all
// flushers are busy and a batch is full, senders wait (backpressure). It
// returns after w.results is closed and everything received is recorded.
//
// A batch's storage is FlushSize outcomes (about 200 KiB at the default
// 512), and at a steady rate a batch closes with a handful in it every few
// milliseconds: batches are reused once recorded, through spare, rather
// than made anew (they were a quarter of all the process allocated at
// 3,000 deliveries/s, and the garbage collector ran eight times a second).
func (w *Worker) completer() {
	batches := make(chan []outcome)
	spare := make(chan []outcome, w.cfg.Flushers+1)
	var flushers sync.WaitGroup
	for range w.cfg.Flushers {
		flushers.Go(func() {
			for b := range batches {
				lost := w.flushWithRetry(b)
				// The recorded rows no longer count against their
				// endpoints' in-flight caps: the claim loop may find work
				// for those endpoints it could not before. Only now, after
				// the commit, may a claim read them again.
				w.held.remove(b, lost)
				if len(lost) > 0 {
					w.held.removeAfter(lost, w.cfg.LeaseMargin)
				}
				ids := make([]int64, len(b))
				for i := range b {
					ids[i] = b[i].d.EndpointID
				}
				w.hints.add(ids...)
				signal(w.freed)
				clear(b) // no payload outlives its batch
				select {
				case spare <- b[:0]:
				default:
				}
			}
		})
	}
	defer flushers.Wait()
	defer close(batches)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch []outcome
	due := false // the batch's FlushInterval has passed
	in := w.results
	for {
		var out chan []outcome
		if len(batch) > 0 && (due || len(batch) >= w.cfg.FlushSize || in == nil) {
			out = batches
		}
		var recv <-chan outcome = in
		if len(batch) >= w.cfg.FlushSize {
			recv = nil
		}
		if in == nil && len(batch) == 0 {
			return
		}
		select {
		case o, ok := <-recv:
			if !ok {
				in = nil
				continue
			}
			if len(batch) == 0 {
				select {
				case batch = <-spare:
				default:
					batch = make([]outcome, 0, w.cfg.FlushSize)
				}
				timer.Reset(w.cfg.FlushInterval)
			}
			batch = append(batch, o)
		case out <- batch:
			batch, due = nil, false
			timer.Stop()
		case <-timer.C:
			due = true
		}
	}
}

// flushWithRetry records a batch and returns the outcomes it could not
// record. While the database is unreachable it retries; senders block
// behind the full results channel meanwhile, so claiming stops too. If the
// database stays away for good, the deliveries are still due in the table
// and are sent again: at-least-once. Any other error means one result
// cannot be stored (a bug, a constraint): the batch is split so the others
// are recorded, and the lone failure is returned.
func (w *Worker) flushWithRetry(batch []outcome) (lost []outcome) {
	for attempt := 1; ; attempt++ {
		timeout := 30 * time.Second
		if d := w.shutdownDeadline.Load(); d != 0 {
			timeout = min(timeout, time.Until(time.Unix(0, d)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
		start := time.Now()
		err := w.flush(ctx, batch)
		cancel()
		w.traceFlush(start, attempt, batch, err)
		w.metrics.observeFlush(time.Since(start), err)
		w.log.Debug("flush", "results", len(batch), "ms", time.Since(start).Milliseconds())
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			if len(batch) == 1 {
				w.log.Error("cannot record a delivery result; it will be sent again",
					"delivery_id", batch[0].d.ID, "err", err, "after", w.cfg.LeaseMargin)
				return batch
			}
			half := len(batch) / 2
			return append(w.flushWithRetry(batch[:half]), w.flushWithRetry(batch[half:])...)
		case attempt == 1 || attempt%30 == 0:
			w.log.Error("record delivery results: database unavailable, retrying", "err", err, "results", len(batch), "attempt", attempt)
		}
		if attempt >= 120 || w.pastShutdownDeadline() { // long enough (or we are stopping): the rows are due again
			w.log.Error("giving up recording results; they will be sent again", "results", len(batch))
			w.unrecorded.Add(int64(len(batch)))
			return batch
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Millisecond, 5*time.Second))
	}
}

// retryable reports whether err is the database being unreachable or
// overloaded (worth retrying as is) rather than a statement that will fail
// again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "53"),
			strings.HasPrefix(pgErr.Code, "57P"), pgErr.Code == "40001", pgErr.Code == "40P01":
			return true
		case db.RoutedToDefault(err):
			// The attempts' insert routed one to the default partition, then
			// waited for it while the attempt's day got its own partition
			// (worker/partitions.go); PostgreSQL refuses the row for the
			// default's new bounds. Sent again, it goes to the new one.
			// (A completion's delivered row in the same race was routed to
			// the new partition after the wait,
			// TestDeliveredRacingANewPartition; its refusal is retryable
			// in case PostgreSQL refuses it instead.)
			return true
		}
		return false
	}
	return true // connection errors, timeouts: no server verdict
}

// flush records one batch in one transaction: delivery state (one UPDATE
// over arrays), attempts, latency samples, breaker transitions and
// Retry-After pauses, and endpoints disabled by 410 Gone.
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
func (w *Worker) flush(ctx context.Context, batch []outcome) error {
	now := w.now()
	var (
		done    db.DeliveryCompleteParams
		release db.DeliveryReleaseParams
		gone    = map[int64]string{}
	)
	release.WorkerID, release.Now = w.id, w.dbNow()
	for i := range batch {
		o := &batch[i]
		d, r := &o.d, &o.res
		if r.ErrorClass == sender.ClassCanceled {
			// Shutdown cut the send short: back to the queue without using
			// an attempt. A delivery claimed by reading is still waiting
			// there, as it was; only a leased probe has a lease to undo.
			if o.leased {
				release.Ids = append(release.Ids, d.ID)
				release.AttemptCounts = append(release.AttemptCounts, d.AttemptCount)
			}
			continue
		}
		status, next := w.nextState(o, d.AttemptCount+1, now)
		o.dead = status == "dead"
		done.Ids = append(done.Ids, d.ID)
		done.AttemptCounts = append(done.AttemptCounts, d.AttemptCount)
		owner := ""
		if o.leased {
			owner = w.id
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
			gone[d.EndpointID] = fmt.Sprintf("the partner answered 410 Gone at %s; re-enable after fixing the URL", o.finished.UTC().Format(time.RFC3339))
		}
	}

	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx := db.NewTxPipeline(conn)
	defer tx.Rollback(ctx)

	// First round trip: the health rows of every endpoint the batch may
	// change (read without locks, see applyBreaker), then the update.
	var (
		s       db.Statements
		health  []db.EndpointHealthReadRow
		applied = map[int64]bool{}
	)
	if ids := breakerCandidates(batch); len(ids) > 0 {
		s.Query(func(q *db.Queries) { _, _ = q.EndpointHealthRead(ctx, ids) }, func(r pgx.Rows) (err error) {
			if health, err = pgx.CollectRows(r, pgx.RowToStructByPos[db.EndpointHealthReadRow]); err != nil {
				return fmt.Errorf("read endpoint health: %w", err)
			}
			return nil
		})
	}
	if len(done.Ids) > 0 {
		s.Query(func(q *db.Queries) { _, _ = q.DeliveryComplete(ctx, done) }, func(r pgx.Rows) error {
			ids, err := pgx.CollectRows(r, pgx.RowTo[int64])
			if err != nil {
				return fmt.Errorf("complete deliveries: %w", err)
			}
			for _, id := range ids {
				applied[id] = true
			}
			return nil
		})
	}
	if err := s.Send(ctx, tx); err != nil {
		return err
	}

	// Second: attempts only of the deliveries just updated. A stale result
	// (another worker took the delivery over and recorded an attempt, or
	// rescue recorded a lost probe as lease_expired) adds nothing, and a
	// batch retried after a commit whose answer was lost (the first try did
	// commit) writes no second copy: the fence matches no row the second
	// time. Latency samples commit with their attempts, so a crash before
	// the next histogram flush loses none of them.
	if rows := attemptRows(batch, applied); len(rows.DeliveryIds) > 0 {
		s.Exec(func(q *db.Queries) { _ = q.AttemptInsertRows(ctx, rows) })
	}
	lat, err := batchLatency(batch, applied)
	if err != nil {
		return err
	}
	if lat != nil {
		s.Exec(func(q *db.Queries) { _ = q.LatencyPendingInsert(ctx, *lat) })
	}
	changed := w.healthChanges(health, batch, applied)
	notes := notices{}
	if len(changed) == 0 && len(release.Ids) == 0 && len(gone) == 0 {
		if s.Len() == 0 { // every result stale: nothing to write
			if err := tx.Commit(ctx); err != nil {
				return err
			}
		} else {
			tx.CommitWithNextBatch()
			if err := s.Send(ctx, tx); err != nil {
				return fmt.Errorf("record attempts: %w", err)
			}
		}
	} else {
		if err := s.Send(ctx, tx); err != nil {
			return fmt.Errorf("record attempts: %w", err)
		}
		q := db.New(tx)
		if len(release.Ids) > 0 {
			if err := q.DeliveryRelease(ctx, release); err != nil {
				return fmt.Errorf("release deliveries: %w", err)
			}
		}
		if err := w.applyBreaker(ctx, q, changed, batch, applied, &notes); err != nil {
			return err
		}
		for id, reason := range gone {
			n, err := q.EndpointDisable(ctx, db.EndpointDisableParams{ID: id, Reason: reason, Cause: "gone", Now: w.dbNow()})
			if err != nil {
				return fmt.Errorf("disable endpoint: %w", err)
			}
			if n > 0 {
				notes.add(notify.EndpointDisabled, id, "gone", map[string]any{"reason": reason})
			}
		}
		if err := notes.insert(ctx, q, w.dbNow()); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	if len(notes.kinds) > 0 {
		signal(w.outbox)
	}
	// Metrics and rate-limit pauses only after commit and only for what
	// this commit recorded, so neither a retried batch nor a stale result
	// is counted twice.
	for i := range batch {
		o := &batch[i]
		if o.res.ErrorClass == sender.ClassCanceled {
			continue
		}
		if o.res.RetryAfter > 0 {
			w.limits.PauseUntil(o.d.EndpointID, o.finished.Add(min(o.res.RetryAfter, backoff.RetryAfterCap)))
		}
		if !applied[o.d.ID] {
			w.log.Warn("result not recorded: the delivery has moved on (another worker took it over with its shard, rescue took a probe's lease, or an earlier try of this batch recorded it)", "delivery_id", o.d.ID)
			continue
		}
		w.metrics.observeOutcome(o)
	}
	return nil
}

// nextState decides what the delivery becomes after attempt attemptNo.
func (w *Worker) nextState(o *outcome, attemptNo int32, now time.Time) (string, time.Time) {
	switch o.res.Outcome {
	case sender.OK:
		return "delivered", now
	case sender.Transient:
		if attemptNo < o.d.MaxAttempts {
			w.rndMu.Lock()
			wait := w.backoff.Next(int(attemptNo), o.res.RetryAfter, w.rnd)
			w.rndMu.Unlock()
			return "failed", o.finished.Add(wait)
		}
	}
	return "dead", now
}

// successResolution is how stale last_success_at may be. A busy endpoint
// succeeds many times per batch; writing its health row for each batch
// only to move that timestamp by milliseconds would be one of the hottest
// writes in the database.
const successResolution = time.Second

// deref is *p, or T's zero value when p is nil (sqlc maps nullable columns
// to pointers).
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
