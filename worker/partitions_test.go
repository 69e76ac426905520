package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestAttemptPartitionsByDay: the worker keeps a partition for today and
// the two days ahead, moves attempts the default partition holds for a day
// into that day's partition when it creates it, drops a partition once its
// whole day is past retention, and retention deletes old attempts left in
// the default partition row by row. Replicas doing it at once do not get
// in each other's way.
func TestAttemptPartitionsByDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now })
	day := func(d int) time.Time {
		return clk.Now().UTC().Truncate(24 * time.Hour).Add(time.Duration(d) * 24 * time.Hour)
	}
	name := func(d int) string { return "delivery_attempts_" + day(d).Format("20060102") }
	// Noon of today: the hour taken off the eight days below must leave
	// the retention's cutoff in the day it is meant to fall in (run in the
	// first hour after midnight, it fell in the day before).
	clk.Advance(day(0).Add(12 * time.Hour).Sub(clk.Now()))
	attempt := func(deliveryID int, at time.Time) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
			VALUES ($1, 1, 1, $2, 1, 'ok')`, deliveryID, at); err != nil {
			t.Fatal(err)
		}
	}
	where := func(deliveryID int) string {
		t.Helper()
		var s string
		if err := e.pool.QueryRow(ctx, `SELECT coalesce((SELECT tableoid::regclass::text FROM delivery_attempts WHERE delivery_id = $1), 'gone')`, deliveryID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	partitions := func() []string {
		t.Helper()
		rows, err := e.pool.Query(ctx, `SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'delivery_attempts'::regclass ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}

	attempt(1, clk.Now())                // today: moved when today's partition is made
	attempt(2, day(3).Add(time.Hour))    // beyond the days kept ahead: stays in the default
	attempt(3, day(-1).Add(time.Hour))   // yesterday: no partition is made for the past
	attempt(4, day(1).Add(23*time.Hour)) // tomorrow, late
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs { // replicas at once
		wg.Go(func() { errs[i] = w.house.keepAttemptPartitions(ctx, clk.Now()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, want := partitions(), []string{name(0), name(1), name(2), "delivery_attempts_default"}; !slices.Equal(got, want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	for id, want := range map[int]string{1: name(0), 2: "delivery_attempts_default", 3: "delivery_attempts_default", 4: name(1)} {
		if got := where(id); got != want {
			t.Errorf("attempt %d in %s, want %s", id, got, want)
		}
	}

	clk.Advance(24 * time.Hour) // day 3 is now within the days ahead
	if err := w.house.keepAttemptPartitions(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := where(2); got != name(2) { // day(2) is the old day(3)
		t.Fatalf("attempt 2 in %s after its day's partition was made, want %s", got, name(2))
	}

	// Eight days on, with 7 days' retention, the cutoff falls within the
	// day after tomorrow (as the test began): the days before it go
	// whole, and that day's partition stays until all of it is past, with
	// an attempt already past retention in it.
	attempt(5, day(1).Add(time.Hour))
	dropped, kept := []string{name(-1), name(0)}, name(1)
	clk.Advance(8*24*time.Hour - time.Hour)
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	got := partitions()
	if slices.Contains(got, dropped[0]) || slices.Contains(got, dropped[1]) || !slices.Contains(got, kept) {
		t.Fatalf("partitions %v: want %v dropped and %s kept", got, dropped, kept)
	}
	for id, want := range map[int]string{1: "gone", 3: "gone", 4: "gone", 5: kept, 2: name(-6)} {
		if got := where(id); got != want {
			t.Errorf("after retention attempt %d in %s, want %s", id, got, want)
		}
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts_default"); n != 0 {
		t.Errorf("%d attempts left in the default partition, all past retention", n)
	}
}

// TestAttemptRacingANewPartitionIsRetried: an attempt routed to the default
// partition while its day's partition is being made waits for the default
// and is then refused by PostgreSQL (the default no longer takes that
// day). The completion counts that as worth retrying, and the retry lands
// in the new partition; were it not retried, the result would be dropped
// and its delivery sent again once its lease expired.
func TestAttemptRacingANewPartitionIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(5 * 24 * time.Hour) // beyond the days made ahead
	insert := func() (string, error) {
		var where string
		err := e.pool.QueryRow(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
			VALUES (1, 1, 1, $1, 1, 'ok') RETURNING tableoid::regclass::text`, day.Add(time.Hour)).Scan(&where)
		return where, err
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE delivery_attempts_default IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	raced := make(chan error, 1)
	go func() { _, err := insert(); raced <- err }()
	e.waitFor("the insert to wait for the default partition", func() bool {
		return e.count(`SELECT count(*) FROM pg_locks WHERE `+inThisDatabase+` AND NOT granted AND relation = 'delivery_attempts_default'::regclass`) == 1
	})
	if err := makeAttemptPartition(ctx, tx, day, day.Add(partitionDay)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-raced
	if err == nil || !retryable(err) {
		t.Fatalf("the raced insert: %v; want a refusal the completion retries", err)
	}
	if where, err := insert(); err != nil || where != partitionName(day) {
		t.Fatalf("sent again: in %s, %v; want %s", where, err, partitionName(day))
	}
	if other := (&pgconn.PgError{Code: "23514", TableName: "delivery_attempts"}); retryable(other) {
		t.Fatal("a CHECK violation elsewhere would be retried")
	}
}

// TestAttemptPartitionSpan: a day per partition up to 14 days' retention,
// then as many days as keep the retention within 14 partitions.
func TestAttemptPartitionSpan(t *testing.T) {
	t.Parallel()
	for retention, days := range map[time.Duration]int{
		time.Hour: 1, 7 * partitionDay: 1, 14 * partitionDay: 1, 14*partitionDay + time.Hour: 2,
		30 * partitionDay: 3, 90 * partitionDay: 7, 365 * partitionDay: 27,
	} {
		if got := attemptPartitionSpan(retention); got != time.Duration(days)*partitionDay {
			t.Errorf("retention %v: span %v, want %d days", retention, got, days)
		}
	}
}

// TestAttemptPartitionsSpanTheRetention: with a year's retention, a year
// and a half of days, one retention pass a day and an attempt every day:
// the partitions made after the migration's three days are 27 days each,
// cut at the same span ends every replica computes, join the ones before
// them without a gap or an overlap, take every attempt (none lands in the
// default partition), and there are never more than the retention's 14
// plus the ones ahead; retention keeps every attempt of the last year.
func TestAttemptPartitionsSpanTheRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	clk := newClock()
	retention := 365 * partitionDay
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Retention.Attempts = retention })
	span := attemptPartitionSpan(retention)
	start := clk.Now()
	most := 0
	for day := range 550 {
		if err := w.RetainNow(ctx); err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
			VALUES ($1, 1, 1, $2, 1, 'ok')`, day, clk.Now()); err != nil {
			t.Fatal(err)
		}
		have, err := w.q.AttemptPartitionRanges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(have))
		for i, r := range have {
			if i > 0 && !r.FromAt.Equal(have[i-1].ToAt) {
				t.Fatalf("day %d: partition %d starts at %v, the one before ends at %v", day, i, r.FromAt, have[i-1].ToAt)
			}
			// Past the migration's days, every partition ends where a
			// span ends.
			if r.ToAt.After(start.Add(4*partitionDay)) && !r.ToAt.Equal(spanEnd(r.ToAt.Add(-time.Nanosecond), span)) {
				t.Fatalf("day %d: partition [%v, %v) ends off the spans of %v", day, r.FromAt, r.ToAt, span)
			}
		}
		if n := e.count("SELECT count(*) FROM delivery_attempts_default"); n != 0 {
			t.Fatalf("day %d: %d attempts in the default partition", day, n)
		}
		clk.Advance(partitionDay)
	}
	// 14 spans of retention, the one the cutoff falls in, today's and the
	// one ahead.
	if most > 17 {
		t.Errorf("up to %d partitions, want at most 17", most)
	}
	// Every attempt of the last 365 days is kept, and none older than a
	// span beyond that.
	var kept int
	var oldest time.Time
	if err := e.pool.QueryRow(ctx, "SELECT count(*), min(started_at) FROM delivery_attempts").Scan(&kept, &oldest); err != nil {
		t.Fatal(err)
	}
	if age := clk.Now().Sub(oldest); kept < 365 || age > retention+span+partitionDay {
		t.Errorf("%d attempts kept, the oldest %v old; want at least 365, none older than %v", kept, age, retention+span+partitionDay)
	}
}
