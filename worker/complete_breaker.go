// The completion's breaker step: which outcomes count, which endpoints
// a batch touches, and the transitions folded under their row locks.

package worker

import (
	"context"
	"fmt"
	"slices"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/sender"
)

// countsForBreaker reports whether an outcome is evidence about the
// endpoint's health. A payload missing a postback field is the producer's
// fault, not the partner's, and a signing or egress settings problem is
// ours; a value its map lacks was never sent. A proxy's failure does
// count: while the proxy is down, every endpoint behind it backs off, as
// for a receiver that is.
func countsForBreaker(o *outcome) bool {
	switch o.res.ErrorClass {
	case classMissingField, classSigning, classEgress, classUnmapped, classSuppressed, classConversionBusy, classConversionState:
		return false
	}
	return o.res.Outcome != sender.Gone
}

// breakerCandidates are the endpoints (sorted, each once) whose health
// rows a batch's outcomes may change: every outcome that counts for the
// breaker or asks for a pause (Retry-After). Their rows are read, without
// locks, with the batch's update; whether each result was applied is known
// only after it, so this is a superset.
func breakerCandidates(batch []outcome) []int64 {
	var ids []int64
	for i := range batch {
		o := &batch[i]
		if o.res.ErrorClass != sender.ClassCanceled && (countsForBreaker(o) || o.res.RetryAfter > 0) {
			ids = append(ids, o.d.EndpointID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// healthChanges folds a batch's applied outcomes into the health rows read
// without locks and returns the endpoints (sorted) whose row that changes.
// Most batches change nothing: successes at a healthy endpoint move only
// last_success_at, which is written at most once per successResolution.
// Without this every batch locked every endpoint it touched, a row lock
// (a heap write) per endpoint per batch, and concurrent flushers queued
// behind each other's commits on those locks. A batch that changes nothing
// in the state it read is ordered before any concurrent writer of the same
// rows, so skipping the lock loses nothing. Results whose delivery update
// was fenced off (stale) do not count.
func (c *completer) healthChanges(read []db.EndpointHealthReadRow, batch []outcome, applied map[int64]bool) []int64 {
	if len(read) == 0 {
		return nil
	}
	rows := make([]db.EndpointHealthLockRow, len(read))
	for i, r := range read {
		rows[i] = db.EndpointHealthLockRow(r)
	}
	var ids []int64
	for id, s := range c.foldBreaker(rows, batch, applied) {
		if s.changed() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// applyBreaker locks (in endpoint order) the health rows of ids, the
// endpoints healthChanges found changing, folds the batch's outcomes again
// into the locked rows (another flush may have changed them since the
// read) and writes them, with their budgets.
func (c *completer) applyBreaker(ctx context.Context, q *db.Queries, ids []int64, batch []outcome, applied map[int64]bool, notes *notices) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.EndpointHealthLock(ctx, ids)
	if err != nil {
		return fmt.Errorf("lock endpoint health: %w", err)
	}
	states := c.foldBreaker(rows, batch, applied)
	if err := writeBudgets(ctx, q, states, c.dbNow(), notes); err != nil {
		return err
	}
	return writeHealth(ctx, q, states, c.dbNow())
}

// foldBreaker applies a batch's outcomes to the given health rows.
func (c *completer) foldBreaker(rows []db.EndpointHealthLockRow, batch []outcome, applied map[int64]bool) map[int64]*healthState {
	states := make(map[int64]*healthState, len(rows))
	for _, r := range rows {
		states[r.EndpointID] = newHealthState(c.breaker, r)
	}
	for i := range batch {
		o := &batch[i]
		s := states[o.d.EndpointID]
		if s == nil || !applied[o.d.ID] {
			continue
		}
		if o.res.RetryAfter > 0 {
			until := o.finished.Add(min(o.res.RetryAfter, backoff.RetryAfterCap))
			if s.pausedUntil == nil || until.After(*s.pausedUntil) {
				s.pausedUntil = &until
			}
		}
		if !countsForBreaker(o) {
			continue
		}
		s.apply(c.breaker, o)
		s.applyBudget(o)
	}
	return states
}
