package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Delivered deliveries are kept in deliveries_delivered, partitioned by
// ranges of event_id (migration 00021). An event's id is a UUIDv7, whose
// first 48 bits are its creation time in Unix milliseconds, so a range of
// ids is a span of time: the partition of [t1, t2) holds the delivered
// deliveries of the events created in it. The worker keeps partitions from
// a span before now to deliveredAhead after it, and drops a partition once
// its whole span is past Retention.Delivered, so a delivered delivery is
// kept for the retention counted from its event, and at most one span
// more. Dead letters and the deliveries still waiting are in
// deliveries_queue, which retention never drops.
//
// The span is the retention ÷ maxDeliveredPartitions, in whole seconds:
// a statement that cannot tell from its conditions which events it needs
// (a delivery looked up by id, an endpoint's log) reads every partition,
// so their number is bounded; the delivered rows of one span are dropped
// together. At the default seven days, spans of 14 hours.
const maxDeliveredPartitions = 12

var deliveredPartitioned = partitioned{"deliveries_delivered", "deliveries_delivered_default", "event_id"}

// deliveredPartitionSpan is how long each new partition of
// deliveries_delivered is for this retention.
func deliveredPartitionSpan(retention time.Duration) time.Duration {
	return max(time.Second, (retention/maxDeliveredPartitions + time.Second - 1).Truncate(time.Second))
}

// deliveredAhead is how far past now the partitions reach: three spans,
// and at least two retention passes, so that rows are never routed to
// the default partition while the passes keep their pace.
func deliveredAhead(span, every time.Duration) time.Duration {
	return max(3*span, 2*every)
}

// UUIDAt is the smallest UUIDv7 of the millisecond t falls in: every event
// created at or after t has an id at least this one.
func UUIDAt(t time.Time) uuid.UUID {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	return u
}

// uuidTime is the time a UUIDv7 was created at, to the millisecond.
func uuidTime(u uuid.UUID) time.Time {
	var ms [8]byte
	copy(ms[2:], u[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(ms[:]))).UTC()
}

// deliveredPartitionName names the partition starting at from.
func deliveredPartitionName(from time.Time) string {
	return "deliveries_delivered_" + from.UTC().Format("20060102t150405")
}

// keepDeliveredPartitions creates the partitions of deliveries_delivered
// that the span before now and the time ahead need and do not have yet,
// and drops those wholly past the retention. It returns where the oldest
// partition kept starts (the zero time when there is none, or when the
// partitions could not be read): every delivered delivery of an event
// made before then is gone, but for those in the default partition.
func (h *housekeeper) keepDeliveredPartitions(ctx context.Context, now time.Time) (oldest time.Time, err error) {
	rows, missing, err := h.makeSpans(ctx, deliveredPartitioned, deliveredPartitionName, now)
	if err != nil {
		return time.Time{}, err
	}
	have := make([]timeRange, len(rows))
	for i, r := range rows {
		have[i] = timeRange{uuidTime(r.from), uuidTime(r.to)}
	}
	r := h.cfg.Retention
	for _, m := range missing {
		if oldest.IsZero() || m[0].Before(oldest) {
			oldest = m[0]
		}
	}
	cutoff := now.Add(-r.Delivered)
	var expired []string
	var firstExpired time.Time
	for i, p := range rows {
		if have[i].to.After(cutoff) {
			if oldest.IsZero() || have[i].from.Before(oldest) {
				oldest = have[i].from
			}
			continue
		}
		if len(expired) == 0 {
			firstExpired = have[i].from
		}
		expired = append(expired, p.name)
	}
	if err := h.dropPartitions(ctx, expired...); err != nil {
		return firstExpired, fmt.Errorf("drop delivered partitions %v: %w", expired, err)
	}
	return oldest, nil
}

// makeSpans makes the partitions of p (partitioned by event id) that
// the span before now and the time ahead need and do not have yet, each
// named by name(its start), in one transaction: one wait for the default
// partition's lock however many a pass makes. It returns the partitions
// there were, and the spans it made.
func (h *housekeeper) makeSpans(ctx context.Context, p partitioned, name func(time.Time) string, now time.Time) (have []spanPartition, made [][2]time.Time, err error) {
	if have, err = h.spanPartitions(ctx, p.table); err != nil {
		return nil, nil, err
	}
	ranges := make([]timeRange, len(have))
	for i, r := range have {
		ranges[i] = timeRange{uuidTime(r.from), uuidTime(r.to)}
	}
	r := h.cfg.Retention
	span := deliveredPartitionSpan(r.Delivered)
	missing := missingPartitions(ranges, now.Add(-span), now.Add(deliveredAhead(span, r.Every)), span)
	if len(missing) == 0 {
		return have, nil, nil
	}
	if err := h.attachPartitions(ctx, p, func(tx pgx.Tx) error {
		for _, m := range missing {
			if err := makePartition(ctx, tx, p, name(m[0]), UUIDAt(m[0]).String(), UUIDAt(m[1]).String()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("create partitions of %s from %s: %w", p.table, name(missing[0][0]), err)
	}
	return have, missing, nil
}
