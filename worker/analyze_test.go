package worker

import (
	"context"
	"testing"
)

// TestAnalyzeYoungTables: the worker analyzes the queue (deliveries_queue)
// and events once they hold youngTableRows rows on a database autovacuum
// has not analyzed them in, and again each time they hold twice the rows
// they had: as they double, and not as a queue that stays the same size
// changes, and with a smaller sample than the cluster's. (Autovacuum is off
// for them here, so only the worker analyzes them, and it is never done.)
func TestAnalyzeYoungTables(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	w := e.worker(nil)
	// events' statistics are its partitions': the one the events below go
	// into is analyzed.
	if _, err := w.house.makeEventPartitions(ctx, w.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	events, err := w.house.eventPartitionAt(ctx, w.cfg.Now())
	if err != nil || events == "" {
		t.Fatalf("no partition of events for now: %q, %v", events, err)
	}
	tables := "ARRAY['deliveries_queue', '" + events + "']"
	for _, table := range []string{"deliveries_queue", events} {
		if _, err := e.pool.Exec(ctx, "ALTER TABLE "+table+" SET (autovacuum_enabled = false)"); err != nil {
			t.Fatal(err)
		}
	}
	analyses := func() int {
		return e.count(`SELECT sum(pg_stat_get_analyze_count(to_regclass(t)))::int FROM unnest(` + tables + `) t`)
	}
	step := func() {
		t.Helper()
		if done, err := w.house.analyzeYoung(ctx); err != nil || done {
			t.Fatalf("analyzeYoung: done %v, %v; want not done while autovacuum has analyzed neither", done, err)
		}
	}
	// Row counts reach the statistics when a session reports them, within
	// about a second: a check that nothing is analyzed waits until both
	// tables show the changes made.
	settled := func(changes int) {
		t.Helper()
		e.waitFor("the changes reported", func() bool {
			return e.count(`SELECT min(pg_stat_get_mod_since_analyze(to_regclass(t)))::int FROM unnest(`+tables+`) t`) >= changes
		})
		step()
	}

	e.events(10, "order.created", `{}`)
	settled(10)
	if n := analyses(); n != 0 {
		t.Fatalf("%d analyses after 10 rows, want none yet", n)
	}

	e.events(youngTableRows, "order.created", `{}`)
	e.waitFor("both tables analyzed", func() bool { step(); return analyses() == 2 })
	// With AnalyzeSettings' smaller sample: a histogram of 11 bounds for
	// the 1,010 distinct ids of each (the cluster's default target makes
	// 101).
	if n := e.count(`SELECT max(array_length(histogram_bounds::text::text[], 1))::int FROM pg_stats
		WHERE tablename = ANY (` + tables + `) AND attname = 'id'`); n != 11 {
		t.Fatalf("histogram of %d bounds for id, want 11 (the analyses' statistics target, 10)", n)
	}

	// 1,010 rows each when analyzed: 1,000 more (youngTableRows) are not
	// enough...
	e.events(youngTableRows, "order.created", `{}`)
	settled(youngTableRows)
	if n := analyses(); n != 2 {
		t.Fatalf("%d analyses after the tables grew by 1,000 rows of 1,010, want still 2", n)
	}
	// ...1,010 are: each table has doubled.
	e.events(10, "order.created", `{}`)
	e.waitFor("both tables analyzed again", func() bool { step(); return analyses() == 4 })

	// A queue that delivers as much as it takes changes by its own size
	// and stays that size: not analyzed again (events grow by half).
	if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1
		WHERE id IN (SELECT id FROM deliveries_queue ORDER BY id LIMIT 1010)`); err != nil {
		t.Fatal(err)
	}
	e.events(1010, "order.created", `{}`)
	settled(1010)
	if n := analyses(); n != 4 {
		t.Fatalf("%d analyses after the queue delivered 1,010 rows and took 1,010 more, want still 4", n)
	}
}
