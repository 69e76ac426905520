package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestEventPartitions: events are kept in partitions of the delivered
// deliveries' spans. Once a span's delivered deliveries are dropped, its
// events go too, with their idempotency keys, but for those that still
// have a delivery (dead, waiting, or delivered into the default partition),
// which are kept in a partition of their own; the events kept before
// partitioning go the same way. Kept events are deleted one by one when
// their last delivery goes, and their partition is dropped once empty.
func TestEventPartitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const retention = time.Hour
	w, clk, span := e.spanWorker(retention)
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})

	// Older than every span: kept with the events from before
	// partitioning (which end when the test database was made), its
	// delivery in the delivered default partition.
	before, err := w.house.spanPartitions(ctx, "events")
	if err != nil || len(before) == 0 || before[0].name != "events_before_partitions" {
		t.Fatalf("partitions %v, %v; want events_before_partitions first", before, err)
	}
	at := clk.Now().Add(-10 * span)
	if end := uuidTime(before[0].to).Add(-time.Minute); end.Before(at) {
		at = end
	}
	old := e.eventsAt(1, "order.created", `{}`, at)[0]
	if _, err := w.house.keepDeliveredPartitions(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.house.makeEventPartitions(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	have, err := w.house.spanPartitions(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range have[1:] { // have[0] is events_before_partitions
		from, to := uuidTime(p.from), uuidTime(p.to)
		if (i > 0 && p.from != have[i].to) || p.name != eventPartitionName(from) || to.After(spanEnd(from, span)) {
			t.Fatalf("partition %s covers [%v, %v) after one ending %v, want spans of %v", p.name, from, to, uuidTime(have[i].to), span)
		}
	}
	if have[0].name != "events_before_partitions" || uuidTime(have[len(have)-1].to).Before(clk.Now().Add(deliveredAhead(span, w.cfg.Retention.Every))) {
		t.Fatalf("partitions %v: want events_before_partitions, then spans to the time ahead", have)
	}
	if got := eventPartitionOf(t, e, old); got != "events_before_partitions" {
		t.Fatalf("an event from before the spans in %s", got)
	}

	// One of each: delivered, dead, waiting, never delivered (none
	// subscribed), in this span; the first two with keys.
	ids := e.eventsAt(4, "order.created", `{}`, clk.Now())
	delivered, dead, waiting, none := ids[0], ids[1], ids[2], ids[3]
	markDelivered(t, e, delivered, old)
	for _, sql := range []string{
		`UPDATE deliveries SET status = 'dead', dead_at = now(), attempt_count = 1 WHERE event_id = '` + dead.String() + `'`,
		`DELETE FROM deliveries WHERE event_id = '` + none.String() + `'`,
		`INSERT INTO event_keys VALUES ('key-delivered', '` + delivered.String() + `'), ('key-dead', '` + dead.String() + `'), ('key-old', '` + old.String() + `')`,
	} {
		if _, err := e.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	spanOf := eventPartitionOf(t, e, delivered)
	if !strings.HasPrefix(spanOf, "events_2") || eventPartitionOf(t, e, none) != spanOf {
		t.Fatalf("events of now in %s, want their span's partition", spanOf)
	}

	// Past the retention: the span goes but for the dead letter's event
	// and the waiting one's, in a partition of their own; the old event
	// goes with its delivery.
	clk.Advance(retention + 2*span)
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.uuids("SELECT id FROM events ORDER BY id"); !slices.Equal(got, sorted(dead, waiting)) {
		t.Fatalf("events left %v, want the dead letter's and the waiting delivery's %v", got, sorted(dead, waiting))
	}
	if got := eventPartitionOf(t, e, dead); got != spanOf+keptSuffix || eventPartitionOf(t, e, waiting) != got {
		t.Fatalf("kept events in %s, want %s", got, spanOf+keptSuffix)
	}
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname IN ($1, 'events_before_partitions')", spanOf); n != 0 {
		t.Fatalf("%d of the partitions past the retention kept", n)
	}
	if n := e.count("SELECT count(*) FROM event_keys WHERE idempotency_key <> 'key-dead'"); n != 0 {
		t.Fatalf("%d keys of dropped events kept", n)
	}
	if n := e.count("SELECT count(*) FROM event_keys WHERE event_id = $1", dead); n != 1 {
		t.Fatal("the kept event's key went")
	}

	// Their deliveries gone, the kept events go one by one (the sweep,
	// here started again from the oldest), then their partitions.
	if _, err := e.pool.Exec(ctx, "DELETE FROM deliveries WHERE event_id = ANY($1)", []uuid.UUID{dead, waiting}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w.house.sweep = eventSweep{}
		if err := w.RetainNow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.uuids("SELECT id FROM events ORDER BY id"); len(got) != 0 {
		t.Fatalf("events left %v, want none", got)
	}
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname LIKE 'events%' || $1", keptSuffix); n != 0 {
		t.Fatalf("%d partitions of kept events left empty", n)
	}
	if n := e.count("SELECT count(*) FROM event_keys"); n != 0 {
		t.Fatalf("%d keys of deleted events kept", n)
	}
}

// eventPartitionOf is the partition holding an event.
func eventPartitionOf(t *testing.T, e *env, event uuid.UUID) string {
	t.Helper()
	var s string
	if err := e.pool.QueryRow(context.Background(), "SELECT tableoid::regclass::text FROM events WHERE id = $1", event).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sorted is ids in order.
func sorted(ids ...uuid.UUID) []uuid.UUID {
	return slices.SortedFunc(slices.Values(ids), func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
}

// readerOf is an open transaction holding table as a reader does (ACCESS
// SHARE), which partition DDL on it must wait for; the caller rolls it
// back.
func (e *env) readerOf(table string) pgx.Tx {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS SHARE MODE"); err != nil {
		tx.Rollback(ctx)
		e.t.Fatal(err)
	}
	return tx
}

// TestPartitionDDLWaitsOutALongReader: a statement that reads events for
// a second holds off the lock a new partition needs; the DDL waits a
// moment at a time, so it stalls other statements briefly, and tries
// again until the reader is done.
func TestPartitionDDLWaitsOutALongReader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	w := e.worker(nil)
	tx := e.readerOf("events_default")
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		tx.Rollback(ctx)
	}()
	defer func() { <-done }()
	start := time.Now()
	if _, err := w.house.makeEventPartitions(ctx, w.cfg.Now()); err != nil {
		t.Fatalf("partitions behind a reader of a second: %v", err)
	}
	if p, err := w.house.eventPartitionAt(ctx, w.cfg.Now()); err != nil || p == "" {
		t.Fatalf("no partition for now: %q, %v", p, err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("made in %v, before the reader was done", waited)
	}
}

// TestEventSpanNotSweptWhenItsDropFails: a span of events past the
// retention whose drop cannot have its locks (a reader holds events for
// the whole pass) keeps its events until a later pass drops it whole; the
// events sweep, in the same pass, does not delete them row by row.
func TestEventSpanNotSweptWhenItsDropFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const retention = time.Hour
	w, clk, span := e.spanWorker(retention)
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})
	if _, err := w.house.keepDeliveredPartitions(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.house.makeEventPartitions(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	// Events no delivery was made for (as a filter would leave them).
	ids := e.eventsAt(3, "order.created", `{}`, clk.Now())
	if _, err := e.pool.Exec(ctx, "DELETE FROM deliveries WHERE event_id = ANY($1)", ids); err != nil {
		t.Fatal(err)
	}
	spanOf := eventPartitionOf(t, e, ids[0])
	if !strings.HasPrefix(spanOf, "events_2") {
		t.Fatalf("events of now in %s, want their span's partition", spanOf)
	}
	clk.Advance(retention + 2*span)

	tx := e.readerOf("events")
	w.house.sweep = eventSweep{}
	err := w.RetainNow(ctx)
	tx.Rollback(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname = $1", spanOf); n != 1 {
		t.Fatalf("the span was dropped behind a reader holding events")
	}
	if got := e.uuids("SELECT id FROM events ORDER BY id"); !slices.Equal(got, sorted(ids...)) {
		t.Fatalf("events left %v, want the span's %v: the sweep deleted them row by row", got, sorted(ids...))
	}

	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname = $1", spanOf); n != 0 {
		t.Fatal("the span past the retention was not dropped once the reader was done")
	}
	if got := e.uuids("SELECT id FROM events"); len(got) != 0 {
		t.Fatalf("events left %v, want none", got)
	}
}
