package worker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
)

// retainLoop runs retention passes until ctx ends: one every
// Retention.Every while passes finish within their budget. A pass that
// ends at its budget (Retention.Budget) with rows still past their
// retention is followed by the next after a pause as long as the pass
// took: retention then spends up to half its time deleting, so it keeps
// pace with traffic that one five-second pass a minute cannot clear (at
// 3,000 deliveries/s a pass deleted about 45,000 of the 170,000
// deliveries a minute brought).
// Passes run on their own goroutine, so a long one never holds up the
// tidy loop or the maintenance loop's probes and rescues. One replica at a time
// runs a pass (RetentionLockTry); the others skip their turn.
func (h *housekeeper) retainLoop(ctx context.Context) {
	for {
		start := time.Now()
		res, err := h.retain(ctx, false)
		if ctx.Err() != nil {
			return
		}
		h.metrics.observeRetention(res, err)
		if err != nil {
			h.log.Error("retention", "err", err)
		}
		wait := h.cfg.Retention.Every
		if res == retainBehind && err == nil {
			wait = min(wait, time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// retainResult is how a retention pass ended.
type retainResult int

const (
	retainCaughtUp retainResult = iota // nothing past its retention left
	retainBehind                       // stopped at its budget with rows left
	retainSkipped                      // another replica was running a pass
)

// retain deletes telemetry and finished work past their retention, in small
// batches, and drops the partitions of attempts, delivered deliveries
// and events past it (creating the coming spans' as it goes). Dead letters
// are kept, and their events with them: they are the debugging dataset. It reports whether it stopped at its budget with rows past
// their retention left to delete. The pass runs on one connection that
// holds the retention lock throughout; when another replica holds it, the
// pass is skipped, or waits for it when wait is set.
func (h *housekeeper) retain(ctx context.Context, wait bool) (res retainResult, err error) {
	h.retainMu.Lock()
	defer h.retainMu.Unlock()
	conn, err := h.session.Acquire(ctx) // its lock is a session lock
	if err != nil {
		return retainCaughtUp, fmt.Errorf("retention: %w", err)
	}
	defer conn.Release()
	q := db.New(conn)
	locked := true
	if wait {
		err = q.RetentionLock(ctx)
	} else {
		locked, err = q.RetentionLockTry(ctx)
	}
	if err != nil {
		return retainCaughtUp, fmt.Errorf("retention lock: %w", err)
	}
	if !locked {
		return retainSkipped, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if ok, err := q.RetentionUnlock(uctx); err != nil || !ok {
			// Ending the session releases its lock; the pool drops the
			// closed connection.
			conn.Conn().Close(uctx)
		}
	}()
	behind, err := h.retainSteps(ctx, q)
	if behind {
		return retainBehind, err
	}
	return retainCaughtUp, err
}

// retainSteps is one retention pass's work, on q (the connection that holds
// the retention lock).
func (h *housekeeper) retainSteps(ctx context.Context, q *db.Queries) (behind bool, err error) {
	now := h.now()
	r := h.cfg.Retention
	h.replanDue(ctx)
	if err := h.keepAttemptPartitions(ctx, now); err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		// Attempts go to the default partition meanwhile; the rest of
		// retention does not depend on it.
		h.log.Warn("attempt partitions", "err", err)
	}
	// The events sweep goes no further than the oldest span of delivered
	// deliveries kept: an event it scans while its delivery is still kept
	// is passed over until the sweep starts again from the oldest
	// (sweepResetEvery), and a span's events are past the retention a
	// span before its partition is.
	sweepBefore := now.Add(-r.Delivered)
	oldestSpan, err := h.keepDeliveredPartitions(ctx, now)
	spansKnown := err == nil || !oldestSpan.IsZero()
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		// Delivered rows go to the default partition meanwhile, where
		// the step below deletes them row by row.
		h.log.Warn("delivered partitions", "err", err)
	}
	if !oldestSpan.IsZero() && oldestSpan.Before(sweepBefore) {
		sweepBefore = oldestSpan
	}
	// Events go by span as well, once their span's delivered deliveries
	// are gone: those kept for a delivery are left to the sweep below.
	eventSpansDone := false
	if spansKnown {
		n, err := h.keepEventPartitions(ctx, now, sweepBefore)
		h.metrics.observeRetained("events", n)
		if err != nil {
			if ctx.Err() != nil {
				return false, err
			}
			h.log.Warn("event partitions", "err", err)
		}
		eventSpansDone = err == nil
	} else if _, err := h.makeEventPartitions(ctx, now); err != nil && ctx.Err() == nil {
		// Events go to the default partition meanwhile.
		h.log.Warn("event partitions", "err", err)
	}
	deadline := time.Now().Add(r.Budget)
	// Events go in the steps below, counted here and logged once a pass,
	// not once a batch.
	var withLast, swept int64
	steps := []struct {
		name string
		run  func() (int64, error)
		// scans: run counts the rows it scanned, not those it deleted;
		// the step's deletions are logged below, with the other events.
		scans bool
	}{
		{name: "attempts outside the day partitions", run: func() (int64, error) {
			n, err := q.RetentionDeleteAttempts(ctx, db.RetentionDeleteAttemptsParams{Before: now.Add(-r.Attempts), BatchSize: int32(r.Batch)})
			h.metrics.observeRetained("delivery_attempts", n)
			return n, err
		}},
		{name: "minute histograms", run: func() (int64, error) {
			n, err := q.RetentionDeleteHistograms(ctx, db.RetentionDeleteHistogramsParams{Resolutions: []int32{resMinute, resSlot}, Before: now.Add(-r.MinuteHistograms), BatchSize: int32(r.Batch)})
			h.metrics.observeRetained("latency_histograms", n)
			return n, err
		}},
		{name: "hourly histograms", run: func() (int64, error) {
			n, err := q.RetentionDeleteHistograms(ctx, db.RetentionDeleteHistogramsParams{Resolutions: []int32{resHour}, Before: now.Add(-r.HourlyHistograms), BatchSize: int32(r.Batch)})
			h.metrics.observeRetained("latency_histograms", n)
			return n, err
		}},
		{name: "delivered deliveries outside the span partitions", run: func() (int64, error) {
			// An event goes with its last delivery: looked up by id, so
			// no scan passes over the events kept for dead letters.
			events, err := q.RetentionDeleteDelivered(ctx, db.RetentionDeleteDeliveredParams{Before: now.Add(-r.Delivered), BatchSize: int32(r.Batch)})
			if err != nil || len(events) == 0 {
				return 0, err
			}
			h.metrics.observeRetained("deliveries", int64(len(events)))
			slices.SortFunc(events, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
			n, err := q.RetentionDeleteEventsOf(ctx, db.RetentionDeleteEventsOfParams{Ids: slices.Compact(events), Before: now.Add(-r.Delivered)})
			if err == nil {
				h.metrics.observeRetained("events", n)
				withLast += n
			}
			return int64(len(events)), err
		}},
		{name: "conversions past their expiry", run: func() (int64, error) {
			return h.retainConversions(ctx, q, now)
		}},
		{name: "events without deliveries", run: func() (int64, error) {
			switch {
			case !spansKnown:
				return 0, nil // which events still have deliveries is not known
			case !eventSpansDone:
				// Spans past the retention were not dropped (their
				// DDL could not have its locks): their events have no
				// delivery left, and the sweep would delete them row
				// by row, 50,000 a batch, where the next pass drops
				// them whole. Measured in a soak: one failed drop,
				// then a batch of 50,000 deletes in the pass.
				return 0, nil
			}
			scanned, deleted, err := h.sweepEvents(ctx, q, sweepBefore)
			swept += deleted
			return scanned, err
		}, scans: true},
	}
	defer func() {
		if withLast > 0 {
			h.log.Info("retention deleted rows", "what", "events with their last delivery", "rows", withLast)
		}
		if swept > 0 {
			h.log.Info("retention deleted rows", "what", "events without deliveries", "rows", swept)
		}
	}()
	// Dashboard sessions expire after 8 h idle or 7 days (web); rows past
	// that are dead weight. Swept here, the one housekeeping loop.
	if n, err := q.UserSessionDeleteExpired(ctx, db.UserSessionDeleteExpiredParams{
		IdleBefore: now.Add(-24 * time.Hour), CreatedBefore: now.Add(-8 * 24 * time.Hour)}); err != nil {
		return false, fmt.Errorf("retention of sessions: %w", err)
	} else if n > 0 {
		h.metrics.observeRetained("user_sessions", n)
		h.log.Info("retention deleted rows", "what", "expired sessions", "rows", n)
	}
	// Portal sessions and sign-in links likewise (web/portal_access.go).
	if n, err := q.RetentionDeletePortalSessions(ctx, db.RetentionDeletePortalSessionsParams{
		IdleBefore: now.Add(-24 * time.Hour), CreatedBefore: now.Add(-8 * 24 * time.Hour)}); err != nil {
		return false, fmt.Errorf("retention of portal sessions: %w", err)
	} else if n > 0 {
		h.metrics.observeRetained("portal_sessions", n)
		h.log.Info("retention deleted rows", "what", "expired portal sessions", "rows", n)
	}
	if n, err := q.RetentionDeletePortalLinks(ctx, now.Add(-24*time.Hour)); err != nil {
		return false, fmt.Errorf("retention of portal links: %w", err)
	} else if n > 0 {
		h.metrics.observeRetained("portal_links", n)
		h.log.Info("retention deleted rows", "what", "expired portal links", "rows", n)
	}
	// Every step runs at least one batch a pass, past the budget if need
	// be: while a step ahead stays behind, the ones after it still move.
	for _, s := range steps {
		var total int64
		done := false
		for first := true; !done && (first || time.Now().Before(deadline)); first = false {
			n, err := s.run()
			if err != nil {
				return false, fmt.Errorf("retention of %s: %w", s.name, err)
			}
			total += n
			done = n < int64(r.Batch)
		}
		behind = behind || !done
		if total > 0 && !s.scans {
			h.log.Info("retention deleted rows", "what", s.name, "rows", total)
		}
	}
	return behind, nil
}

// RetainNow runs one retention pass (tests and the event log bench).
// It waits for another replica's pass to end rather than skip.
func (w *Worker) RetainNow(ctx context.Context) error { return w.house.RunOnce(ctx) }

// sweepResetEvery is how often the events sweep starts again from the
// oldest event: events it passed over while they still had a delivery
// (a dead letter replayed and delivered since, say) are deleted then.
const sweepResetEvery = 24 * time.Hour

// sweepEvents deletes one batch of events older than before that have no
// delivery (none was made, or a filter took none), moving the sweep's
// cursor past everything it scanned. It reports how many it scanned, so a
// pass goes on while there is more to scan, and how many it deleted.
func (h *housekeeper) sweepEvents(ctx context.Context, q *db.Queries, before time.Time) (scanned, deleted int64, err error) {
	if time.Since(h.sweep.startedAt) > sweepResetEvery {
		h.sweep = eventSweep{startedAt: time.Now()}
	}
	r, err := q.RetentionSweepEvents(ctx, db.RetentionSweepEventsParams{
		Before: before, AfterCreatedAt: h.sweep.createdAt, AfterID: h.sweep.id, BatchSize: int32(h.cfg.Retention.Batch)})
	if err != nil {
		return 0, 0, err
	}
	h.sweep.createdAt, h.sweep.id = r.LastCreatedAt, r.LastID
	h.metrics.observeRetained("events", r.Deleted)
	return r.Scanned, r.Deleted, nil
}

// eventSweep is where the events sweep has got to (the last event it
// scanned), kept in memory: a restarted worker sweeps from the start once.
type eventSweep struct {
	startedAt time.Time
	createdAt time.Time
	id        uuid.UUID
}
