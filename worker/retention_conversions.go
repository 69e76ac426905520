package worker

import (
	"context"
	"time"

	"github.com/hookline/hookline/db"
)

// retainConversions deletes one batch of conversion state and one of
// conversion history past their expiry: each row carries its own, the
// endpoint's conversion_days (postback rules; 90 days when unset) after
// the conversion last changed, so an endpoint's setting applies to the
// state it keeps without a scan of endpoints. It returns the larger of
// the two batches, so the pass goes on while either is behind.
func (h *housekeeper) retainConversions(ctx context.Context, q *db.Queries, now time.Time) (int64, error) {
	batch := int32(h.cfg.Retention.Batch)
	state, err := q.RetentionDeleteConversions(ctx, db.RetentionDeleteConversionsParams{Before: now, BatchSize: batch})
	if err != nil {
		return 0, err
	}
	h.metrics.observeRetained("conversions", state)
	history, err := q.RetentionDeleteConversionHistory(ctx, db.RetentionDeleteConversionHistoryParams{Before: now, BatchSize: batch})
	if err != nil {
		return 0, err
	}
	h.metrics.observeRetained("conversion_history", history)
	return max(state, history), nil
}
