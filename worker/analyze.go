package worker

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// youngTableRows is how many rows a young queue table must hold before
// the worker first analyzes it itself.
const youngTableRows = 1000

// analyzeYoung analyzes the queue (deliveries_queue) and events (the
// partition new events go into) while
// autovacuum has not yet analyzed them, each time one holds twice the rows
// it had when last analyzed (and at least youngTableRows): as it
// doubles. It reports whether autovacuum has analyzed both (then it need
// not run again). Rows held, not rows changed: the queue gives up every
// row it delivers (to deliveries_delivered, migration 00021), so at a
// steady rate it changes by its own size every second or two while
// staying the same size, and counting changes analyzed it as often
// (223 times in a soak's first four minutes at 3,000 deliveries/s).
//
// PostgreSQL caches one generic plan per statement and connection (the
// claim always, see ClaimSettings; others after a few runs) and makes a new
// one only when the tables it reads are analyzed. On a new database the
// first claims plan for near-empty tables, where scanning a table, or
// walking the wrong index, is the cheapest way in; autovacuum's first
// ANALYZE can be a minute or more away, and until it comes those plans
// read every row. Measured at 3,000 events/s on new clusters: claims of
// 360 ms, a backlog of 11-30 s in the first two minutes (5 runs of 5); at
// 1,000 endpoints and 1,000 events/s, a median of 5-7 s. One ANALYZE at
// 1,000 rows cured the backlog, but the plans it made were for a table of
// a few thousand rows, and the soak's latency still climbed until
// autovacuum came (p50 to 74-1,300 ms within 80 s, 6 runs of 6); analyzed
// as it doubles, p50 stayed at 11-42 ms (3 runs of 3). Each ANALYZE reads
// a sample of 3,000 rows (AnalyzeSettings): about 10 ms.
func (h *housekeeper) analyzeYoung(ctx context.Context) (done bool, err error) {
	// events is partitioned (migration 00022): its partitions have the
	// statistics, and the one the new events go into is the young one.
	tables := []string{"deliveries_queue"}
	if p, err := h.eventPartitionAt(ctx, h.now()); err != nil {
		return false, err
	} else if p != "" {
		tables = append(tables, p)
	}
	young, err := h.q.TablesYoung(ctx, tables)
	if err != nil {
		return false, fmt.Errorf("find tables autovacuum has not analyzed: %w", err)
	}
	if len(young) == 0 {
		return true, nil
	}
	for _, y := range young {
		if y.RowsNow < max(youngTableRows, 2*y.RowsEstimate) {
			continue
		}
		t := y.Name
		err = pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
			q := h.q.WithTx(tx)
			if err := q.AnalyzeSettings(ctx); err != nil {
				return err
			}
			if t == "deliveries_queue" {
				return q.AnalyzeDeliveries(ctx)
			}
			_, err := tx.Exec(ctx, "ANALYZE "+pgx.Identifier{t}.Sanitize())
			return err
		})
		if err != nil {
			return false, fmt.Errorf("analyze %s: %w", t, err)
		}
		h.log.Info("analyzed a young table before autovacuum did", "table", t, "rows", y.RowsNow)
	}
	return false, nil
}

// eventPartitionAt is the partition of events that holds the events
// created at t ("" when only the default partition does).
func (h *housekeeper) eventPartitionAt(ctx context.Context, t time.Time) (string, error) {
	parts, err := h.spanPartitions(ctx, eventsPartitioned.table)
	if err != nil {
		return "", err
	}
	id := UUIDAt(t)
	for _, p := range parts {
		if bytes.Compare(p.from[:], id[:]) <= 0 && bytes.Compare(id[:], p.to[:]) < 0 {
			return p.name, nil
		}
	}
	return "", nil
}
