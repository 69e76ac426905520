package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/db"
)

// retentionBatch bounds one DELETE: a short transaction that never holds
// many row locks, so delivery is not blocked behind retention.
const retentionBatch = 5000

// retentionBudget bounds one retention run; what is left waits for the next.
const retentionBudget = 5 * time.Second

// retain deletes telemetry and finished work past their retention, in small
// batches. Dead letters are kept: they are the debugging dataset.
func (w *Worker) retain(ctx context.Context) error {
	now := w.now()
	r := w.cfg.Retention
	deadline := time.Now().Add(retentionBudget)
	steps := []struct {
		name string
		run  func() (int64, error)
	}{
		{"attempts", func() (int64, error) {
			return w.q.RetentionDeleteAttempts(ctx, db.RetentionDeleteAttemptsParams{Before: now.Add(-r.Attempts), BatchSize: retentionBatch})
		}},
		{"minute histograms", func() (int64, error) {
			return w.q.RetentionDeleteHistograms(ctx, db.RetentionDeleteHistogramsParams{Resolutions: []int32{resMinute, resSlot}, Before: now.Add(-r.MinuteHistograms), BatchSize: retentionBatch})
		}},
		{"hourly histograms", func() (int64, error) {
			return w.q.RetentionDeleteHistograms(ctx, db.RetentionDeleteHistogramsParams{Resolutions: []int32{resHour}, Before: now.Add(-r.HourlyHistograms), BatchSize: retentionBatch})
		}},
		{"delivered deliveries", func() (int64, error) {
			return w.q.RetentionDeleteDelivered(ctx, db.RetentionDeleteDeliveredParams{Before: now.Add(-r.Delivered), BatchSize: retentionBatch})
		}},
		{"events", func() (int64, error) {
			return w.q.RetentionDeleteEvents(ctx, db.RetentionDeleteEventsParams{Before: now.Add(-r.Delivered), BatchSize: retentionBatch})
		}},
	}
	// Dashboard sessions expire after 8 h idle or 7 days (web); rows past
	// that are dead weight. Swept here, the one housekeeping loop.
	if n, err := w.q.UserSessionDeleteExpired(ctx, db.UserSessionDeleteExpiredParams{
		IdleBefore: now.Add(-24 * time.Hour), CreatedBefore: now.Add(-8 * 24 * time.Hour)}); err != nil {
		return fmt.Errorf("retention of sessions: %w", err)
	} else if n > 0 {
		w.log.Info("retention deleted rows", "what", "expired sessions", "rows", n)
	}
	// Portal sessions and sign-in links likewise (web/portal_access.go).
	if n, err := w.q.RetentionDeletePortalSessions(ctx, db.RetentionDeletePortalSessionsParams{
		IdleBefore: now.Add(-24 * time.Hour), CreatedBefore: now.Add(-8 * 24 * time.Hour)}); err != nil {
		return fmt.Errorf("retention of portal sessions: %w", err)
	} else if n > 0 {
		w.log.Info("retention deleted rows", "what", "expired portal sessions", "rows", n)
	}
	if n, err := w.q.RetentionDeletePortalLinks(ctx, now.Add(-24*time.Hour)); err != nil {
		return fmt.Errorf("retention of portal links: %w", err)
	} else if n > 0 {
		w.log.Info("retention deleted rows", "what", "expired portal links", "rows", n)
	}
	for _, s := range steps {
		var total int64
		for time.Now().Before(deadline) {
			n, err := s.run()
			if err != nil {
				return fmt.Errorf("retention of %s: %w", s.name, err)
			}
			total += n
			if n < retentionBatch {
				break
			}
		}
		if total > 0 {
			w.log.Info("retention deleted rows", "what", s.name, "rows", total)
		}
	}
	return nil
}

// RetainNow runs one retention pass (tests).
func (w *Worker) RetainNow(ctx context.Context) error { return w.retain(ctx) }
