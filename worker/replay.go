package worker

import (
	"context"
	"fmt"

	"github.com/hookline/hookline/db"
)

// replayBatch is how many deliveries one step of a bulk replay re-queues:
// one short transaction every maintenance tick (250 ms), so a replay of a
// million deliveries never holds the queue behind one UPDATE, and the
// worker drains what it re-queued while the next batches are written.
const replayBatch = 500

// replayStep advances the oldest running bulk replay by one batch, under
// the job's row lock (a replica working on it makes the others skip it).
// It reports whether a batch was written.
func (m *maintainer) replayStep(ctx context.Context) (bool, error) {
	// Nearly always none is running: one read instead of a transaction.
	if running, err := m.q.ReplayJobAnyRunning(ctx); err != nil || !running {
		return false, err
	}
	tx, err := m.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	q := m.q.WithTx(tx)
	job, err := q.ReplayJobClaim(ctx)
	if db.NoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim a replay job: %w", err)
	}
	ids, err := q.DeliveryReplayBatch(ctx, db.DeliveryReplayBatchParams{
		Stamp: job.Stamp, Status: job.Status, AfterID: job.LastID, EndpointID: job.EndpointID,
		Since: job.Since, Until: job.Until, EventType: job.EventType, Q: job.Q, BatchSize: replayBatch,
	})
	if err != nil {
		return false, fmt.Errorf("replay job %d: %w", job.ID, err)
	}
	last := job.LastID
	for _, id := range ids {
		last = max(last, id)
	}
	if err := q.ReplayJobAdvance(ctx, db.ReplayJobAdvanceParams{
		ID: job.ID, Replayed: int64(len(ids)), LastID: last, Done: len(ids) < replayBatch,
	}); err != nil {
		return false, fmt.Errorf("replay job %d progress: %w", job.ID, err)
	}
	if len(ids) > 0 {
		if err := q.EventNotify(ctx, db.NotifyQueueLimit); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	if len(ids) > 0 {
		m.log.Info("bulk replay re-queued deliveries", "job", job.ID, "deliveries", len(ids))
		m.cfg.WakeClaims()
	}
	return true, nil
}

// ReplayStepNow runs one bulk-replay step (tests).
func (w *Worker) ReplayStepNow(ctx context.Context) (bool, error) { return w.maint.replayStep(ctx) }
