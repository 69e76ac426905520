package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// events is partitioned by ranges of id (migration 00022), in the same
// spans as deliveries_delivered: the partition of [t1, t2) holds the
// events created in it. The worker makes them ahead with the delivered
// spans, and once the delivered deliveries of a span are dropped, it
// drops the span's events too: those that still have a delivery (waiting,
// retrying, dead, or delivered into the default partition) are first
// copied into a partition of their own for the same range, named with
// keptSuffix, and the span's partition is dropped in the same
// transaction, so no reader ever misses one of them. A kept partition
// holds a handful of rows; the events sweep deletes them one by one as
// their deliveries go, and the partition is dropped once it is empty.
// The events kept when the table was partitioned are one partition,
// events_before_partitions, which ends where partitioning began and goes
// the same way.
var eventsPartitioned = partitioned{"events", "events_default", "id"}

// keptSuffix names the partition a span's kept events are copied into.
const keptSuffix = "_kept"

// eventPartitionName names the events' partition starting at from.
func eventPartitionName(from time.Time) string {
	return "events_" + from.UTC().Format("20060102t150405")
}

// makeEventPartitions creates the partitions of events that the span
// before now and the time ahead need and do not have yet (see
// keepDeliveredPartitions). It returns the partitions there are.
func (h *housekeeper) makeEventPartitions(ctx context.Context, now time.Time) ([]spanPartition, error) {
	have, _, err := h.makeSpans(ctx, eventsPartitioned, eventPartitionName, now)
	return have, err
}

// keepEventPartitions makes the coming spans' partitions of events and
// drops those that end at or before before, keeping the events that
// still have a delivery (see eventsPartitioned). before must be no later
// than the oldest span of delivered deliveries kept: every event older
// has no delivery left but in the queue and the delivered default
// partition, so the events kept are few. It reports about how many
// events were dropped with their partitions.
func (h *housekeeper) keepEventPartitions(ctx context.Context, now, before time.Time) (dropped int64, err error) {
	have, err := h.makeEventPartitions(ctx, now)
	if err != nil {
		return 0, err
	}
	var spans []spanPartition
	var emptied []string
	for _, p := range have {
		if uuidTime(p.to).After(before) {
			continue
		}
		if !strings.HasSuffix(p.name, keptSuffix) {
			spans = append(spans, p)
			continue
		}
		// A partition of kept events goes once the sweep has deleted
		// them all.
		var empty bool
		if err := h.pool.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM "+pgx.Identifier{p.name}.Sanitize()+")").Scan(&empty); err != nil {
			return 0, fmt.Errorf("read kept events %s: %w", p.name, err)
		}
		if empty {
			emptied = append(emptied, p.name)
		}
	}
	if err := h.dropPartitions(ctx, emptied...); err != nil {
		return 0, fmt.Errorf("drop emptied partitions of kept events %v: %w", emptied, err)
	}
	if len(spans) == 0 {
		return 0, nil
	}
	dropped, err = h.dropEventSpans(ctx, spans)
	if err != nil {
		return 0, fmt.Errorf("drop event partitions from %s: %w", spans[0].name, err)
	}
	return dropped, nil
}

// dropEventSpans drops the events partitions spans with their events'
// idempotency keys, after copying the events that still have a delivery
// into a partition named with keptSuffix for each span's range, all in
// one transaction: one wait for events' ACCESS EXCLUSIVE lock however
// many spans a pass drops. It reports about how many events went (from
// the tables' statistics: counting would read the spans).
func (h *housekeeper) dropEventSpans(ctx context.Context, spans []spanPartition) (dropped int64, err error) {
	kept := make([]int64, len(spans))
	err = h.partitionDDL(ctx, func(tx pgx.Tx) error {
		dropped = 0
		var drop []string
		for i, p := range spans {
			kept[i] = 0
			var exists bool
			var rows int64
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL,
				coalesce((SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass($1)), 0)`, p.name).Scan(&exists, &rows); err != nil {
				return err
			}
			if !exists {
				continue // another replica dropped it
			}
			dropped += rows
			span := pgx.Identifier{p.name}.Sanitize()
			keep := pgx.Identifier{p.name + keptSuffix}.Sanitize()
			lo, hi := "'"+p.from.String()+"'", "'"+p.to.String()+"'"
			// The kept events, found from their deliveries (an index
			// range on the queue and the delivered default partition),
			// not by reading the span.
			if _, err := tx.Exec(ctx, "CREATE TABLE "+keep+" (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `INSERT INTO `+keep+` SELECT ev.* FROM `+span+` ev
				WHERE ev.id IN (SELECT d.event_id FROM deliveries d WHERE d.event_id >= `+lo+` AND d.event_id < `+hi+`)`)
			if err != nil {
				return err
			}
			kept[i] = tag.RowsAffected()
			if _, err := tx.Exec(ctx, `DELETE FROM event_keys k WHERE k.event_id >= `+lo+` AND k.event_id < `+hi+`
				AND NOT EXISTS (SELECT 1 FROM `+keep+` ev WHERE ev.id = k.event_id)`); err != nil {
				return err
			}
			drop = append(drop, span)
			if kept[i] == 0 {
				drop = append(drop, keep)
			}
		}
		if len(drop) == 0 {
			return nil
		}
		// From here to the commit, events is locked (ACCESS EXCLUSIVE):
		// catalog changes and a check of the few rows kept.
		if _, err := tx.Exec(ctx, "DROP TABLE "+strings.Join(drop, ", ")); err != nil {
			return err
		}
		for i, p := range spans {
			if kept[i] > 0 {
				if _, err := tx.Exec(ctx, "ALTER TABLE events ATTACH PARTITION "+pgx.Identifier{p.name + keptSuffix}.Sanitize()+
					" FOR VALUES FROM ('"+p.from.String()+"') TO ('"+p.to.String()+"')"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i, p := range spans {
		dropped -= kept[i]
		h.log.Info("retention dropped a partition", "table", p.name, "kept", kept[i])
	}
	return max(0, dropped), nil
}

// spanPartition is a partition of a table partitioned by event id: its
// name and the ids it covers, [from, to).
type spanPartition struct {
	name     string
	from, to uuid.UUID
}

// spanPartitions reads the span partitions of table, in order.
func (h *housekeeper) spanPartitions(ctx context.Context, table string) ([]spanPartition, error) {
	rows, err := h.q.SpanPartitionRanges(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("find the partitions of %s: %w", table, err)
	}
	out := make([]spanPartition, len(rows))
	for i, r := range rows {
		out[i] = spanPartition{r.Name, r.FromID, r.ToID}
	}
	return out, nil
}
