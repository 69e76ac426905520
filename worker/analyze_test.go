package worker

import (
	"context"
	"testing"
)

// TestAnalyzeYoungTables: the worker analyzes deliveries and events once
// they have grown on a database that never analyzed them, and then stops
// looking. (Autovacuum is off for them here, so only the worker can.)
func TestAnalyzeYoungTables(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, table := range []string{"deliveries", "events"} {
		if _, err := e.pool.Exec(ctx, "ALTER TABLE "+table+" SET (autovacuum_enabled = false)"); err != nil {
			t.Fatal(err)
		}
	}
	analyzed := func() int {
		return e.count(`SELECT count(*) FROM unnest(ARRAY['deliveries', 'events']) t
			WHERE pg_stat_get_last_analyze_time(to_regclass(t)) IS NOT NULL`)
	}
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	w := e.worker(nil)

	e.events(10, "order.created", `{}`)
	if done, err := w.analyzeYoung(ctx); err != nil || done {
		t.Fatalf("analyzeYoung on new tables: done %v, %v", done, err)
	}
	if n := analyzed(); n != 0 {
		t.Fatalf("%d tables analyzed after 10 rows, want none yet", n)
	}

	e.events(youngTableChanges, "order.created", `{}`)
	// Row counts reach the statistics when a session reports them, within
	// about a second.
	e.waitFor("both tables analyzed", func() bool {
		if _, err := w.analyzeYoung(ctx); err != nil {
			t.Fatal(err)
		}
		return analyzed() == 2
	})
	if done, err := w.analyzeYoung(ctx); err != nil || !done {
		t.Fatalf("analyzeYoung after both were analyzed: done %v, %v; want done", done, err)
	}
}
