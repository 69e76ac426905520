package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// delivery_attempts is partitioned by started_at into spans of whole UTC
// days (migration 00018 made the first ones a day each). The worker keeps
// partitions for today and the next partitionDaysAhead days, and drops a
// partition once all of it is past the attempts' retention: attempts are
// kept for their retention and at most one span more.
//
// A span is a day while the retention is up to maxAttemptPartitions days,
// and longer beyond that, so that about maxAttemptPartitions partitions
// hold the retained attempts whatever the retention: every statement that
// cannot tell from its own conditions which days it needs (an endpoint's
// attempt page) plans and probes every partition, which at a year's
// retention in days (366 partitions) cost 120-170 ms a page.
const (
	partitionDay       = 24 * time.Hour
	partitionDaysAhead = 2
	// maxAttemptPartitions is how many partitions the retention spans at
	// most (the days ahead come on top).
	maxAttemptPartitions = 14
	// partitionLockTimeout bounds how long partition DDL waits for its
	// locks: making a partition needs the default partition's ACCESS
	// EXCLUSIVE lock and dropping one the parent's, and every statement
	// on the table queues behind the DDL while it waits. A statement that
	// reads the table for seconds (a report, an export) holds the DDL
	// off; with 500 ms of waiting, each try stalled the hot statements
	// for those 500 ms, and in a soak whose bench read the events for
	// 1-4 s each minute, partitions went unmade for passes on end and
	// events went to the default partition meanwhile. Short waits, tried
	// again a moment later (partitionDDLTries), stall the hot statements
	// far less and find the gap between long readers.
	partitionLockTimeout = "50ms"
	// partitionDDLTries is how many times partition DDL is tried when it
	// cannot have its locks, partitionDDLPause × the tries so far apart;
	// after that it is tried again at the next pass.
	partitionDDLTries = 8
	partitionDDLPause = 250 * time.Millisecond
	// partitionLockKey serializes partition DDL between replicas
	// (pg_advisory_xact_lock): "hookline attempt partitions".
	partitionLockKey = int64(0x686c5f7061727473)
)

// attemptPartitionSpan is how long each new partition of delivery_attempts
// is for this retention: whole days, retention ÷ maxAttemptPartitions
// rounded up.
func attemptPartitionSpan(retention time.Duration) time.Duration {
	days := (retention + partitionDay - 1) / partitionDay
	return max(1, (days+maxAttemptPartitions-1)/maxAttemptPartitions) * partitionDay
}

// spanEnd is where the span that holds t ends. Spans are counted from the
// Unix epoch, so replicas with the same retention cut the same spans.
func spanEnd(t time.Time, span time.Duration) time.Time {
	n := t.Sub(time.Unix(0, 0)) / span
	return time.Unix(0, 0).Add((n + 1) * span).UTC()
}

// timeRange is the span of time [from, to) a partition covers.
type timeRange struct{ from, to time.Time }

// missingPartitions is the ranges to partition so that [from, to) is
// covered, given the ranges covered already (ordered by end): each gap is
// cut at the ends of spans, and no range overlaps one that exists, so a
// change of retention (and of span) joins the partitions made before it.
func missingPartitions(have []timeRange, from, to time.Time, span time.Duration) [][2]time.Time {
	var out [][2]time.Time
	t := from
	for t.Before(to) {
		end := spanEnd(t, span)
		covered := false
		for _, r := range have {
			switch {
			case !r.from.After(t) && r.to.After(t): // r holds t
				t, covered = r.to, true
			case r.from.After(t) && r.from.Before(end): // r starts inside the span
				end = r.from
			}
			if covered {
				break
			}
		}
		if !covered {
			out = append(out, [2]time.Time{t, end})
			t = end
		}
	}
	return out
}

// keepAttemptPartitions creates the partitions that today and the days
// ahead need and do not have yet, and drops those wholly past retention.
func (h *housekeeper) keepAttemptPartitions(ctx context.Context, now time.Time) error {
	today := now.UTC().Truncate(partitionDay)
	rows, err := h.q.AttemptPartitionRanges(ctx)
	if err != nil {
		return fmt.Errorf("find the attempt partitions: %w", err)
	}
	have := make([]timeRange, len(rows))
	for i, r := range rows {
		have[i] = timeRange{r.FromAt, r.ToAt}
	}
	span := attemptPartitionSpan(h.cfg.Retention.Attempts)
	for _, r := range missingPartitions(have, today, today.Add((partitionDaysAhead+1)*partitionDay), span) {
		if err := h.createAttemptPartition(ctx, r[0], r[1]); err != nil {
			return err
		}
	}
	expired, err := h.q.AttemptPartitionsBefore(ctx, now.Add(-h.cfg.Retention.Attempts))
	if err != nil {
		return fmt.Errorf("find expired attempt partitions: %w", err)
	}
	if err := h.dropPartitions(ctx, expired...); err != nil {
		return fmt.Errorf("drop attempt partitions %v: %w", expired, err)
	}
	return nil
}

// createAttemptPartition creates the partition of [from, to) (see
// makePartition).
func (h *housekeeper) createAttemptPartition(ctx context.Context, from, to time.Time) error {
	if err := h.attachPartitions(ctx, attemptsPartitioned, func(tx pgx.Tx) error {
		return makeAttemptPartition(ctx, tx, from, to)
	}); err != nil {
		return fmt.Errorf("create attempt partition %s: %w", partitionName(from), err)
	}
	return nil
}

// partitionName names the partition starting at from by its first day.
func partitionName(from time.Time) string { return "delivery_attempts_" + from.Format("20060102") }

// makeAttemptPartition makes the attempts' partition of [from, to) in tx.
func makeAttemptPartition(ctx context.Context, tx pgx.Tx, from, to time.Time) error {
	return makePartition(ctx, tx, attemptsPartitioned, partitionName(from), from.Format(time.RFC3339), to.Format(time.RFC3339))
}

// partitioned names a table partitioned by ranges of key, and its default
// partition.
type partitioned struct{ table, defaultPartition, key string }

var attemptsPartitioned = partitioned{"delivery_attempts", "delivery_attempts_default", "started_at"}

// makePartition makes the partition name of p for keys in [lo, hi) (SQL
// literals), in tx, unless it exists (another replica made it). Rows of
// that range already in the default partition move into it first:
// PostgreSQL refuses a partition for rows the default holds. The new table
// is filled and then attached, which takes only a SHARE UPDATE EXCLUSIVE
// lock on p.table, so rows go on being written meanwhile; one routed to
// the default partition meanwhile waits for it and is then refused, and
// the completion sends it again (retryable).
func makePartition(ctx context.Context, tx pgx.Tx, p partitioned, name, lo, hi string) error {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil || exists {
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	table, def, key := pgx.Identifier{p.table}.Sanitize(), pgx.Identifier{p.defaultPartition}.Sanitize(), pgx.Identifier{p.key}.Sanitize()
	for _, sql := range []string{
		// Taken first, so that no row of the range lands in the default
		// partition between the move and the attach.
		"LOCK TABLE " + def + " IN ACCESS EXCLUSIVE MODE",
		"CREATE TABLE " + ident + " (LIKE " + table + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
		fmt.Sprintf(`WITH moved AS (DELETE FROM %s WHERE %s >= '%s' AND %s < '%s' RETURNING *)
			INSERT INTO %s SELECT * FROM moved`, def, key, lo, key, hi, ident),
		fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')", table, ident, lo, hi),
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

// dropPartitions drops partitions past their retention, in one
// transaction (under partitionDDL), and logs them: one wait for the
// parent's ACCESS EXCLUSIVE lock however many a pass drops.
func (h *housekeeper) dropPartitions(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	idents := make([]string, len(names))
	for i, n := range names {
		idents[i] = pgx.Identifier{n}.Sanitize()
	}
	if err := h.partitionDDL(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(idents, ", "))
		return err
	}); err != nil {
		return err
	}
	for _, n := range names {
		h.log.Info("retention dropped a partition", "table", n)
	}
	return nil
}

// attachPartitions runs attach, DDL that attaches partitions to p.table
// (makePartition), under partitionDDL, and then makes every session plan
// again the statements it keeps that read p.table (replan).
//
// A statement planned while the attach is under way, and kept with one
// plan for every execution (one without parameters, or one PostgreSQL
// has chosen a generic plan for), keeps a plan without the new partition,
// and PostgreSQL (15.18 here) does not plan it again: the planner reads
// the table's partitions, then waits for the default partition, which the
// attach holds (ACCESS EXCLUSIVE), and takes the attach's invalidation
// while it plans, before its plan is kept. Its session then reads nothing
// of the rows that go to the new partition until the connection closes
// (TestAttachPartitionsReplans). A replan that fails is logged and left
// to the next retention pass: the partitions were made.
func (h *housekeeper) attachPartitions(ctx context.Context, p partitioned, attach func(pgx.Tx) error) error {
	if err := h.partitionDDL(ctx, attach); err != nil {
		return err
	}
	if err := h.replan(ctx, p); err != nil && ctx.Err() == nil {
		h.log.Warn("partitions", "err", err)
	}
	return nil
}

// replan changes p's default partition's catalog row once every statement
// planned during an attach has been planned and kept, which makes every
// session plan again the statements it keeps that read p.table: a plan
// made during an attach still scans the default partition. It first
// waits for the default partition's ACCESS EXCLUSIVE lock, as the attach
// did: a statement planned during the attach holds the default partition
// until it has run, and a change made while it is still planning would be
// taken in that planning and lost too. The change is resetting
// parallel_workers, which hookline never sets. When it cannot have the
// lock, the next retention pass tries again (replanDue).
func (h *housekeeper) replan(ctx context.Context, p partitioned) error {
	def := pgx.Identifier{p.defaultPartition}.Sanitize()
	err := h.partitionDDL(ctx, func(tx pgx.Tx) error {
		for _, sql := range []string{
			"LOCK TABLE " + def + " IN ACCESS EXCLUSIVE MODE",
			"ALTER TABLE " + def + " RESET (parallel_workers)",
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		h.replanLater.Store(p.table, p)
		return fmt.Errorf("plan again the statements that read %s: %w", p.table, err)
	}
	h.replanLater.Delete(p.table)
	return nil
}

// replanDue retries the replans that could not have their lock.
func (h *housekeeper) replanDue(ctx context.Context) {
	h.replanLater.Range(func(_, v any) bool {
		if err := h.replan(ctx, v.(partitioned)); err != nil && ctx.Err() == nil {
			h.log.Warn("partitions", "err", err)
		}
		return ctx.Err() == nil
	})
}

// partitionDDL runs fn in a transaction that holds the partition lock and
// waits at most partitionLockTimeout for any other lock, up to
// partitionDDLTries times while it cannot have them.
func (h *housekeeper) partitionDDL(ctx context.Context, fn func(pgx.Tx) error) error {
	for try := 1; ; try++ {
		err := pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockKey); err != nil {
				return err
			}
			return fn(tx)
		})
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55P03" || try == partitionDDLTries {
			return err
		}
		h.log.Info("partition DDL could not have its locks; trying again", "try", try)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * partitionDDLPause):
		}
	}
}
