package db_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
)

// TestDueScanSkipsDeliveredRows: the claim's scan of deliveries_due reads
// a delivered row's entry once and then skips it, even while rows queued
// in the same transaction (an equal key) still wait. With btree posting
// lists an entry is marked dead only when every row of its list is, and
// every scan read all the delivered rows again (migration 00023): 104
// buffers each time here, where it now reads 106 and then 10.
func TestDueScanSkipsDeliveredRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	// 2,000 deliveries to one endpoint, queued in one statement: one
	// next_attempt_at. Each row takes about a sixth of a page (last_error),
	// so a scan that reads delivered rows again reads many pages. Every
	// 100th still waits; the others are delivered (they leave the queue's
	// partition) in a transaction of their own.
	seedDeliveries(t, pool, 1, 2000, seed{status: "pending", errorChunks: 40})
	// A synchronous commit, as in production (the tests' clusters commit
	// asynchronously): until its commit record is flushed, no scan may mark
	// the delivered rows' versions dead.
	if _, err := pool.Exec(ctx, `BEGIN; SET LOCAL synchronous_commit = on;
		UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1 WHERE id % 100 <> 0;
		COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off; SET enable_bitmapscan = off"); err != nil {
		t.Fatal(err)
	}
	scan := func() (buffers int) {
		t.Helper()
		var out []struct {
			Plan struct {
				NodeType  string `json:"Node Type"`
				SharedHit int    `json:"Shared Hit Blocks"`
				Plans     []struct {
					IndexName string `json:"Index Name"`
				} `json:"Plans"`
			} `json:"Plan"`
		}
		var raw []byte
		if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
			SELECT id FROM deliveries_queue
			WHERE endpoint_id = (SELECT min(id) FROM endpoints) AND status IN ('pending', 'failed') AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT 5`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
			t.Fatalf("plan %s: %v", raw, err)
		}
		p := out[0].Plan
		if p.NodeType != "Limit" || !slices.ContainsFunc(p.Plans, func(c struct {
			IndexName string `json:"Index Name"`
		}) bool {
			return c.IndexName == "deliveries_due"
		}) {
			t.Fatalf("want a limited scan of deliveries_due, got %s", raw)
		}
		return p.SharedHit
	}
	first := scan()
	if first < 90 {
		t.Fatalf("the first scan read %d buffers: want the delivered rows read (about a hundred)", first)
	}
	// A scan marks an entry dead only once no transaction may still see
	// the row's old version: one that is running (an autovacuum ANALYZE
	// in this database, say) holds that back for its length.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for n := scan(); n > 30; n = scan() {
		select {
		case <-deadline:
			t.Fatalf("the scan read %d buffers, then %d for 10 s: want the delivered rows' entries skipped (at most 30)", first, n)
		case <-tick.C:
		}
	}
}
