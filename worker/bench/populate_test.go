package bench

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/hookline/hookline/db/dbtest"
)

// TestPopulate: the generator writes the shape it documents (2 deliveries
// and about 3 attempts per event, each delivery at its event's time, the
// newest events queued, some dead), leaves every index and constraint the
// migrations define in place, and refuses a database that has endpoints.
func TestPopulate(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t)
	ctx := context.Background()
	// Every index and constraint of the loaded tables, and every foreign
	// key into them.
	indexes := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index
			WHERE indrelid IN ('events'::regclass, 'deliveries'::regclass, 'delivery_attempts'::regclass)
			UNION ALL
			SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid IN ('events'::regclass, 'deliveries'::regclass, 'delivery_attempts'::regclass)
			   OR confrelid IN ('events'::regclass, 'deliveries'::regclass, 'delivery_attempts'::regclass)
			ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			out = append(out, s)
		}
		rows.Close()
		return out
	}
	before := indexes()
	r, err := Populate(ctx, pool, 3000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Every index valid, and every partition of the attempt log with its
	// parent's indexes: an index rebuilt on the parent alone ("ON ONLY")
	// reads the same above, but is invalid and covers no partition.
	var invalid, missing int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM pg_index WHERE NOT indisvalid),
			(SELECT count(*) FROM pg_inherits p JOIN pg_index pi ON pi.indrelid = p.inhparent
			 WHERE p.inhparent = 'delivery_attempts'::regclass
			   AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index ci ON ci.indexrelid = ii.inhrelid
			                   WHERE ii.inhparent = pi.indexrelid AND ci.indrelid = p.inhrelid))`).Scan(&invalid, &missing); err != nil {
		t.Fatal(err)
	}
	if invalid != 0 || missing != 0 {
		t.Fatalf("after populating: %d invalid indexes, %d partition indexes missing", invalid, missing)
	}
	if after := indexes(); !slices.Equal(before, after) {
		t.Fatalf("indexes and constraints before %v\nafter %v", before, after)
	}
	if r.Events != 3000 || r.Deliveries != 6003 || r.Attempts < 8000 || r.Attempts > 10000 {
		t.Fatalf("populated %+v", r)
	}
	check := func(what, query string) {
		t.Helper()
		var ok bool
		if err := pool.QueryRow(ctx, query).Scan(&ok); err != nil || !ok {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("deliveries at their event's time", `SELECT NOT EXISTS (SELECT 1 FROM deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.created_at <> ev.created_at)`)
	check("some queued, some dead", `SELECT count(*) FILTER (WHERE status = 'pending') > 0 AND count(*) FILTER (WHERE status = 'dead') > 0 FROM deliveries`)
	check("attempts match their deliveries", `SELECT NOT EXISTS (SELECT 1 FROM deliveries d WHERE attempt_count <> (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id))`)
	check("search keys", `SELECT count(*) = 1 FROM events WHERE search_values @> ARRAY[md5('c42')]`)
	if _, err := Populate(ctx, pool, 10, io.Discard); err == nil {
		t.Fatal("populating a database that has endpoints did not fail")
	}
}
