package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// delivery_attempts is partitioned by UTC day of started_at (migration
// 00018). The worker keeps partitions for today and the next
// partitionDaysAhead days, and drops a partition once its whole day is
// past the attempts' retention: attempts are kept for their retention and
// at most one day more.
const (
	partitionDay       = 24 * time.Hour
	partitionDaysAhead = 2
	// partitionLockTimeout bounds how long partition DDL waits for its
	// locks: dropping a partition needs the parent's ACCESS EXCLUSIVE
	// lock, and every statement on delivery_attempts queues behind it
	// while it waits. One that times out is tried on the next pass.
	partitionLockTimeout = "500ms"
	// partitionLockKey serializes partition DDL between replicas
	// (pg_advisory_xact_lock): "hookline attempt partitions".
	partitionLockKey = int64(0x686c5f7061727473)
)

// keepAttemptPartitions creates the partitions of today and the days
// ahead that do not exist yet, and drops those wholly past retention.
func (w *Worker) keepAttemptPartitions(ctx context.Context, now time.Time) error {
	today := now.UTC().Truncate(partitionDay)
	days := make([]time.Time, 0, partitionDaysAhead+1)
	for i := range partitionDaysAhead + 1 {
		days = append(days, today.Add(time.Duration(i)*partitionDay))
	}
	missing, err := w.q.AttemptDaysWithoutPartition(ctx, days)
	if err != nil {
		return fmt.Errorf("find missing attempt partitions: %w", err)
	}
	for _, day := range missing {
		if err := w.createAttemptPartition(ctx, day.UTC()); err != nil {
			return err
		}
	}
	expired, err := w.q.AttemptPartitionsBefore(ctx, now.Add(-w.cfg.Retention.Attempts))
	if err != nil {
		return fmt.Errorf("find expired attempt partitions: %w", err)
	}
	for _, name := range expired {
		if err := w.partitionDDL(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
			return err
		}); err != nil {
			return fmt.Errorf("drop attempt partition %s: %w", name, err)
		}
		w.log.Info("retention dropped a partition", "table", name)
	}
	return nil
}

// createAttemptPartition creates the partition of the day starting at
// from (see makeDayPartition).
func (w *Worker) createAttemptPartition(ctx context.Context, from time.Time) error {
	if err := w.partitionDDL(ctx, func(tx pgx.Tx) error { return makeDayPartition(ctx, tx, from) }); err != nil {
		return fmt.Errorf("create attempt partition %s: %w", dayPartition(from), err)
	}
	return nil
}

// dayPartition names the partition of the day starting at from.
func dayPartition(from time.Time) string { return "delivery_attempts_" + from.Format("20060102") }

// makeDayPartition makes the partition of the day starting at from, in
// tx, unless it exists. Attempts of that day already in the default
// partition move into it first: PostgreSQL refuses a partition for rows
// the default holds. The new table is filled and then attached, which
// takes only a SHARE UPDATE EXCLUSIVE lock on delivery_attempts, so
// attempts go on being written meanwhile; one routed to the default
// partition meanwhile waits for it and is then refused, and the completion
// sends it again (retryable).
func makeDayPartition(ctx context.Context, tx pgx.Tx, from time.Time) error {
	name := dayPartition(from)
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil || exists {
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	lo, hi := from.Format(time.RFC3339), from.Add(partitionDay).Format(time.RFC3339)
	for _, sql := range []string{
		// Taken first, so that no attempt of the day lands in the default
		// partition between the move and the attach.
		"LOCK TABLE delivery_attempts_default IN ACCESS EXCLUSIVE MODE",
		"CREATE TABLE " + ident + " (LIKE delivery_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
		fmt.Sprintf(`WITH moved AS (DELETE FROM delivery_attempts_default WHERE started_at >= '%s' AND started_at < '%s' RETURNING *)
			INSERT INTO %s SELECT * FROM moved`, lo, hi, ident),
		fmt.Sprintf("ALTER TABLE delivery_attempts ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')", ident, lo, hi),
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

// partitionDDL runs fn in a transaction that holds the partition lock and
// waits at most partitionLockTimeout for any other lock.
func (w *Worker) partitionDDL(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockKey); err != nil {
			return err
		}
		return fn(tx)
	})
}
