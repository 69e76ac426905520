package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// captured is a DBTX that records the statement a generated method sends
// and sends nothing, so a test can EXPLAIN exactly that statement with
// exactly those arguments.
type captured struct {
	db.DBTX
	sql  string
	args []any
}

var errCaptured = errors.New("captured, not sent")

// planStatements names the statements explain prepares.
var planStatements atomic.Int64

func (c *captured) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.sql, c.args = sql, args
	return nil, errCaptured
}

func (c *captured) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.sql, c.args = sql, args
	return pgconn.CommandTag{}, errCaptured
}

func (c *captured) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	c.sql, c.args = sql, args
	return capturedRow{}
}

type capturedRow struct{}

func (capturedRow) Scan(...any) error { return errCaptured }

func (c *captured) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	c.sql, c.args = b.QueuedQueries[0].SQL, b.QueuedQueries[0].Arguments
	return capturedBatch{}
}

type capturedBatch struct{}

func (capturedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, errCaptured }
func (capturedBatch) Query() (pgx.Rows, error)         { return nil, errCaptured }
func (capturedBatch) QueryRow() pgx.Row                { return nil }
func (capturedBatch) Close() error                     { return nil }
func (capturedBatch) Tx() pgx.Tx                       { return nil }

// explain returns the plan of the statement captured in stmt under
// plan_cache_mode mode, in a transaction where settings (the settings a
// statement runs with, such as ClaimSettings) ran first.
func explain(t *testing.T, pool *pgxpool.Pool, stmt captured, mode string, settings ...func(*db.Queries) error) planNode {
	t.Helper()
	return explainWith(t, pool, stmt, mode, "FORMAT JSON", settings...)
}

// explainWith is explain with EXPLAIN's options ("ANALYZE, FORMAT JSON"
// runs the statement, in the transaction it rolls back).
func explainWith(t *testing.T, pool *pgxpool.Pool, stmt captured, mode, options string, settings ...func(*db.Queries) error) planNode {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, set := range settings {
		if err := set(db.New(tx)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	// A prepared statement, EXECUTEd with its arguments written out as
	// literals: EXPLAIN of the statement itself with parameters is planned
	// with their values whatever plan_cache_mode says, so it would never
	// show the generic plan.
	name := fmt.Sprintf("plan_test_%d", planStatements.Add(1))
	sd, err := tx.Conn().Prepare(ctx, name, stmt.sql)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer func() { _ = tx.Conn().Deallocate(ctx, name) }()
	lits := make([]string, len(stmt.args))
	for i, a := range stmt.args {
		text, err := tx.Conn().TypeMap().Encode(sd.ParamOIDs[i], pgtype.TextFormatCode, a, nil)
		if err != nil {
			t.Fatalf("argument %d: %v", i+1, err)
		}
		lits[i] = "NULL"
		if text != nil {
			lits[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'"
		}
	}
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN ("+options+") EXECUTE "+name+"("+strings.Join(lits, ", ")+")").Scan(&raw); err != nil {
		t.Fatalf("explain (%s): %v", mode, err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	return plans[0].Plan
}

// planNode is the part of EXPLAIN (FORMAT JSON) the plan tests read.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	IndexCond    string     `json:"Index Cond"`
	SortKey      []string   `json:"Sort Key"`
	Plans        []planNode `json:"Plans"`
	// With ANALYZE: the rows a node returned a loop, and its loops.
	ActualRows  float64 `json:"Actual Rows"`
	ActualLoops float64 `json:"Actual Loops"`
}

// rowsFrom sums the rows the nodes reading relation returned (ANALYZE).
func (n planNode) rowsFrom(relation string) float64 {
	rows := 0.0
	if n.RelationName == relation && n.NodeType != "ModifyTable" {
		rows += n.ActualRows * n.ActualLoops
	}
	for _, c := range n.Plans {
		rows += c.rowsFrom(relation)
	}
	return rows
}

// scansOf lists how each node reaching relation reads it ("Seq Scan",
// "Index Scan on deliveries_pkey", ...).
func (n planNode) scansOf(relation string) []string {
	var out []string
	if n.RelationName == relation && n.NodeType != "ModifyTable" {
		s := n.NodeType
		if n.IndexName != "" {
			s += " on " + n.IndexName
		}
		if n.IndexCond != "" {
			s += " by " + n.IndexCond
		}
		out = append(out, s)
	}
	for _, c := range n.Plans {
		out = append(out, c.scansOf(relation)...)
	}
	return out
}

// indexScans lists the index condition of each node that reads index
// (a bitmap index scan has no relation of its own).
func (n planNode) indexScans(index string) []string {
	var out []string
	if n.IndexName == index {
		out = append(out, n.IndexCond)
	}
	for _, c := range n.Plans {
		out = append(out, c.indexScans(index)...)
	}
	return out
}

// seed is how seedDeliveries fills the queue: every delivery in status
// (delivered ones with delivered_at), every pendingEvery-th of them
// pending instead and every leasedEvery-th leased to worker w1 as a probe
// is (0: none).
type seed struct {
	status                    string
	pendingEvery, leasedEvery int
	errorChunks               int // last_error of 32 × errorChunks bytes, to fill the table's pages
}

// seedDeliveries fills a fresh database with endpoints × events
// deliveries as s says, and analyzes it.
func seedDeliveries(t *testing.T, pool *pgxpool.Pool, endpoints, events int, s seed) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(`
		INSERT INTO partners (name) VALUES ('plan');
		INSERT INTO endpoints (partner_id, name, kind, url)
		SELECT p.id, 'e' || i, 'webhook', 'http://127.0.0.1:1/' || i FROM partners p, generate_series(1, %d) i;
		INSERT INTO endpoint_health (endpoint_id) SELECT id FROM endpoints;
		INSERT INTO events (id, type, payload)
		SELECT gen_random_uuid(), 'plan.test', '{}' FROM generate_series(1, %d);
		INSERT INTO deliveries (event_id, endpoint_id, max_attempts, status, delivered_at, last_error)
		SELECT ev.id, e.id, 5, '%s', CASE WHEN '%[3]s' = 'delivered' THEN now() END,
		       CASE WHEN %[6]d > 0 THEN repeat(md5(ev.id::text), %[6]d) END
		FROM events ev, endpoints e;
		UPDATE deliveries SET status = 'pending', delivered_at = NULL
		WHERE %[4]d > 0 AND id %% greatest(%[4]d, 1) = 1 %% greatest(%[4]d, 1);
		UPDATE deliveries SET status = 'in_flight', lease_owner = 'w1', lease_expires_at = now() + interval '1 minute'
		WHERE %[5]d > 0 AND id %% greatest(%[5]d, 1) = 0;
		ANALYZE;`, endpoints, events, s.status, s.pendingEvery, s.leasedEvery, s.errorChunks)); err != nil {
		t.Fatal(err)
	}
}

// TestCompletionPlan: a completion batch reaches its deliveries by one
// primary-key lookup each, under custom and generic plans alike, on a
// table where the rows a worker holds look rare to the planner: deliveries
// claimed by reading (still pending) and breaker probes leased to it. The
// plan it replaced scanned every in-flight row (or the whole table) and
// unnested the batch again for each, 43 ms for 127 results where the
// lookups take 4 ms. The table holds 100,000 rows: on one of a few
// thousand, hashing the batch against a scan of the whole table is the
// cheaper plan, and the planner rightly takes it.
func TestCompletionPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	// Most rows dead letters, which stay in deliveries_queue with the
	// rows a worker holds (delivered rows have partitions of their own).
	seedDeliveries(t, pool, 50, 2000, seed{status: "dead", pendingEvery: 30, leasedEvery: 300})
	var ids []int64
	var counts []int32
	var owners []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(id), array_agg(attempt_count), array_agg(coalesce(lease_owner, ''))
		FROM (SELECT id, attempt_count, lease_owner FROM deliveries WHERE status IN ('pending', 'in_flight') ORDER BY id LIMIT 127) s`).Scan(&ids, &counts, &owners); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(owners, "") || !slices.Contains(owners, "w1") {
		t.Fatalf("the batch should mix claims by reading and leased probes: owners %v", owners)
	}
	n := len(ids)
	fill := func(s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	now := time.Now()
	times := make([]time.Time, n)
	codes := make([]int32, n)
	ms := make([]float64, n)
	for i := range times {
		times[i], codes[i], ms[i] = now, 200, 3
	}

	cases := []struct {
		name string
		call func(*db.Queries) error
	}{
		{"DeliveryComplete", func(q *db.Queries) error {
			_, err := q.DeliveryComplete(ctx, db.DeliveryCompleteParams{
				Ids: ids, AttemptCounts: counts, Owners: owners, Statuses: fill("delivered"), NextAttemptAts: times,
				FinishedAts: times, Errors: fill(""), ErrorClasses: fill(""), StatusCodes: codes,
				DurationsMs: ms})
			return err
		}},
		{"DeliveryRelease", func(q *db.Queries) error {
			return q.DeliveryRelease(ctx, db.DeliveryReleaseParams{Ids: ids, AttemptCounts: counts, WorkerID: "w1"})
		}},
	}
	for _, c := range cases {
		var stmt captured
		if err := c.call(db.New(&stmt)); !errors.Is(err, errCaptured) {
			t.Fatalf("%s: want the statement captured, got %v", c.name, err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, pool, stmt, mode)
			scans := plan.scansOf("deliveries_queue")
			if len(scans) != 1 || scans[0] != "Index Scan on deliveries_pkey by (id = u.id)" {
				t.Errorf("%s (%s): deliveries_queue read by %s, want one Index Scan on deliveries_pkey by (id = u.id)",
					c.name, mode, strings.Join(scans, ", "))
			}
			// The delivered rows' partitions are not planned at all.
			if s := plan.scansOf("deliveries_delivered_default"); len(s) > 0 {
				t.Errorf("%s (%s): the delivered rows read by %s, want them pruned", c.name, mode, strings.Join(s, ", "))
			}
		}
	}
}

// TestClaimPlan: the claim reads each endpoint's due deliveries through
// deliveries_due, oldest first, under the settings and the generic plan
// it runs with (ClaimSettings): never a scan of the table, nor a bitmap
// scan, and events by key. A bitmap scan reads every entry of the
// endpoint's range, dead ones included (only a plain index scan marks
// dead entries so that the next one skips them), and then sorts them all
// for a LIMIT of a few. Two tables: one where nearly every row is
// delivered and the rows due are spread over many endpoints; and the
// queue as a soak leaves it, analyzed with few rows live among tens of
// thousands not yet vacuumed, on which the generic plan was a bitmap scan:
// claims of 5-90 ms for minutes at a time, until the next ANALYZE
// (worker/bench/performance.md, "Plans made from a near-empty queue").
func TestClaimPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		seed func(t *testing.T, pool *pgxpool.Pool)
	}{
		{"delivered history", func(t *testing.T, pool *pgxpool.Pool) {
			seedDeliveries(t, pool, 200, 500, seed{status: "delivered", pendingEvery: 50})
			// The events of a longer history: with only the seed's 500,
			// hashing a whole (five-page) events table against the few
			// rows picked is rightly cheaper than looking them up, which
			// no real queue is.
			if _, err := pool.Exec(ctx, `INSERT INTO events (id, type, payload)
				SELECT gen_random_uuid(), 'plan.old', '{}' FROM generate_series(1, 50000); ANALYZE events`); err != nil {
				t.Fatal(err)
			}
		}},
		{"queue analyzed among dead rows", func(t *testing.T, pool *pgxpool.Pool) {
			seedDeliveries(t, pool, 10, 10000, seed{status: "pending"})
			if _, err := pool.Exec(ctx, `ALTER TABLE deliveries_queue SET (autovacuum_enabled = false);
				UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE id % 10000 <> 0;
				ANALYZE deliveries_queue`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pool := dbtest.Pool(t)
			c.seed(t, pool)
			var heldEndpoints, heldIDs []int64
			if err := pool.QueryRow(ctx, `SELECT array_agg(endpoint_id), array_agg(id)
				FROM (SELECT endpoint_id, id FROM deliveries WHERE status = 'pending' ORDER BY id LIMIT 300) s`).Scan(&heldEndpoints, &heldIDs); err != nil {
				t.Fatal(err)
			}
			shards := make([]bool, 256)
			for i := range shards {
				shards[i] = i%2 == 0
			}
			for _, a := range []struct {
				name string
				arg  db.DeliveryClaimParams
			}{
				{"everywhere, some shards", db.DeliveryClaimParams{Shards: shards, HeldEndpointIds: heldEndpoints, HeldIds: heldIDs, MaxRows: 256}},
				{"everywhere, every shard", db.DeliveryClaimParams{HeldEndpointIds: heldEndpoints, HeldIds: heldIDs, MaxRows: 256}},
				{"named endpoints", db.DeliveryClaimParams{EndpointIds: []int64{2, 4, 6}, Shards: shards, HeldEndpointIds: heldEndpoints, HeldIds: heldIDs, MaxRows: 256}},
			} {
				var stmt captured
				if _, err := db.New(&stmt).DeliveryClaim(ctx, a.arg); !errors.Is(err, errCaptured) {
					t.Fatalf("%s: want the statement captured, got %v", a.name, err)
				}
				plan := explain(t, pool, stmt, "force_generic_plan", func(q *db.Queries) error { return q.ClaimSettings(ctx) })
				if s := plan.scansOf("deliveries_delivered_default"); len(s) > 0 {
					t.Errorf("%s: the delivered rows read by %s, want them pruned", a.name, strings.Join(s, ", "))
				}
				scans := plan.scansOf("deliveries_queue")
				if len(scans) == 0 {
					t.Errorf("%s: deliveries_queue not read", a.name)
				}
				for _, s := range scans {
					// The queued endpoints' skip scan (the claim's "queued"
					// CTE) reads deliveries_due one entry a step, LIMIT 1,
					// from the index alone.
					if !strings.HasPrefix(s, "Index Scan on deliveries_due by ((endpoint_id = ") && !strings.HasPrefix(s, "Index Only Scan on deliveries_due") {
						t.Errorf("%s: deliveries read by %s, want index scans of deliveries_due by endpoint (or the skip scan of its entries)", a.name, s)
					}
				}
				if k := plan.sortKeys(); slices.Contains(k, "d.next_attempt_at") {
					t.Errorf("%s: due deliveries sorted (%v), want them read in the index's order", a.name, k)
				}
				for _, s := range plan.scansOf("events") {
					if !strings.HasPrefix(s, "Index Scan on events_pkey") {
						t.Errorf("%s: events read by %s, want events_pkey lookups", a.name, s)
					}
				}
			}
		})
	}
}

// TestFanOutPlan: with many endpoints, each subscribed to its own types,
// fan-out finds the set's endpoints through the event_types index, in one
// search for all of its types, and tests one by one only the endpoints
// that take every type or a pattern, never every endpoint against every
// event. It reads no deliveries: its wake-up NOTIFY names the endpoints
// from the rows it inserted. A separate statement that looked them up in
// the queue walked a whole partial index per event once the queue had
// been analyzed nearly empty (1,593 calls of 5-40 ms in two minutes of a
// soak; worker/bench/performance.md, "Plans made from a near-empty
// queue").
func TestFanOutPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	if _, err := pool.Exec(ctx, `
		INSERT INTO partners (name) VALUES ('plan');
		INSERT INTO endpoints (partner_id, name, kind, url, event_types)
		SELECT p.id, 'e' || i, 'webhook', 'http://127.0.0.1:1/', ARRAY['conversion.' || i, 'refund.' || i]
		FROM partners p, generate_series(1, 3000) i;
		INSERT INTO endpoints (partner_id, name, kind, url, event_types)
		SELECT p.id, 'w' || i, 'webhook', 'http://127.0.0.1:1/', CASE WHEN i = 1 THEN '{}' ELSE ARRAY['order.*'] END
		FROM partners p, generate_series(1, 3) i;
		ANALYZE endpoints;`); err != nil {
		t.Fatal(err)
	}
	events := make([]db.FanOutEvent, 10)
	for i := range events {
		events[i] = db.FanOutEvent{ID: uuid.New(), Type: fmt.Sprintf("conversion.%d", i+1)}
	}
	var stmt captured
	var err error
	db.New(&stmt).DeliveryFanOut(ctx, db.FanOut(events, true)).Query(func(_ int, _ []db.DeliveryFanOutRow, e error) { err = e })
	if !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode, func(q *db.Queries) error { return q.FanOutSettings(ctx) })
		scans := plan.scansOf("endpoints")
		for _, s := range scans {
			if strings.HasPrefix(s, "Seq Scan") {
				t.Errorf("fan-out (%s) reads endpoints by %s", mode, strings.Join(scans, ", "))
				break
			}
		}
		// One search of the type index for the whole set, by overlap.
		if s := plan.indexScans("endpoints_event_types"); len(s) != 1 || !strings.HasPrefix(s[0], "(event_types && ") {
			t.Errorf("fan-out (%s) searches endpoints_event_types by %q, want one search for the set's types (&&)", mode, s)
		}
		for _, r := range plan.relationsLike("deliveries") {
			if s := plan.scansOf(r); len(s) > 0 {
				t.Errorf("fan-out (%s) reads %s by %s", mode, r, strings.Join(s, ", "))
			}
		}
	}
}

// TestEventAttemptsPlan: an event's attempts are read from the attempt
// log's partitions from the event's day on (not_before), not from every
// partition: at a year's retention, 366 of them, probing each cost 77 ms
// a call against 1 ms. Both the dashboard's statement and the portal's.
func TestEventAttemptsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	// The migration made the partitions up to the end of the day after
	// tomorrow; six more days after those.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	for i := 3; i <= 8; i++ {
		from := day.AddDate(0, 0, i)
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE delivery_attempts_plan_%d PARTITION OF delivery_attempts FOR VALUES FROM ('%s') TO ('%s')",
			i, from.Format(time.RFC3339), from.AddDate(0, 0, 1).Format(time.RFC3339))); err != nil {
			t.Fatal(err)
		}
	}
	notBefore := day.AddDate(0, 0, 6).Add(time.Hour)
	want := []string{"delivery_attempts_default", "delivery_attempts_plan_6", "delivery_attempts_plan_7", "delivery_attempts_plan_8"}

	statements := map[string]captured{}
	var stmt captured
	if _, err := db.New(&stmt).AttemptListByEvent(ctx, db.AttemptListByEventParams{EventID: uuid.New(), NotBefore: notBefore}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	statements["AttemptListByEvent"] = stmt
	if _, err := db.New(&stmt).PortalAttemptListByEvent(ctx, db.PortalAttemptListByEventParams{EventID: uuid.New(), PartnerID: 1, NotBefore: notBefore}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	statements["PortalAttemptListByEvent"] = stmt
	for name, stmt := range statements {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			got := explain(t, pool, stmt, mode).relationsLike("delivery_attempts_")
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s (%s) reads partitions %v, want %v", name, mode, got, want)
			}
		}
	}
}

// sortKeys lists the keys of every Sort in the plan.
func (n planNode) sortKeys() []string {
	out := slices.Clone(n.SortKey)
	for _, c := range n.Plans {
		out = append(out, c.sortKeys()...)
	}
	return out
}

// relationsLike lists, sorted and once each, the relations the plan reads
// whose names start with prefix.
func (n planNode) relationsLike(prefix string) []string {
	var walk func(planNode)
	seen := map[string]bool{}
	walk = func(n planNode) {
		if strings.HasPrefix(n.RelationName, prefix) {
			seen[n.RelationName] = true
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(n)
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// TestRetentionPlan: retention picks each batch of delivered deliveries
// outside the span partitions (in deliveries_delivered_default) by
// delivered_at, oldest first, and deletes it by primary key, under custom and generic plans alike, on a table where every row is
// past the cutoff. Written as id IN (subquery), the planner hashed the
// batch against a scan of the whole table, so every batch read all of
// deliveries and retention slowed as the table grew; histogram rows are
// likewise deleted by their addresses, not by a join.
func TestRetentionPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	// Delivered rows in partitions of their own, as the worker keeps them
	// (by ranges of the seed's random event ids), besides the default.
	for i, r := range [][2]string{{"MINVALUE", "'40000000-0000-0000-0000-000000000000'"},
		{"'40000000-0000-0000-0000-000000000000'", "'80000000-0000-0000-0000-000000000000'"},
		{"'80000000-0000-0000-0000-000000000000'", "'c0000000-0000-0000-0000-000000000000'"}} {
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE deliveries_delivered_plan%d PARTITION OF deliveries_delivered FOR VALUES FROM (%s) TO (%s)", i, r[0], r[1])); err != nil {
			t.Fatal(err)
		}
	}
	seedDeliveries(t, pool, 50, 2000, seed{status: "delivered", pendingEvery: 30})
	// Older events whose deliveries are gone with their partitions: what
	// the events sweep finds first.
	if _, err := pool.Exec(ctx, `INSERT INTO events (id, type, payload, created_at)
		SELECT gen_random_uuid(), 'plan.old', '{}', now() - interval '1 hour' FROM generate_series(1, 50000); ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(time.Hour)

	var stmt captured
	if _, err := db.New(&stmt).RetentionDeleteDelivered(ctx, db.RetentionDeleteDeliveredParams{Before: before, BatchSize: 5000}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		got := explain(t, pool, stmt, mode).scansOf("deliveries_delivered_default")
		slices.Sort(got)
		if len(got) != 2 || !strings.HasPrefix(got[0], "Index Scan on deliveries_delivered_default_delivered_at_idx by (delivered_at < ") ||
			got[1] != "Index Scan on deliveries_delivered_default_pkey by (id = ANY ($0))" {
			t.Errorf("RetentionDeleteDelivered (%s): deliveries_delivered_default read by %s, want an Index Scan by delivered_at and one on its primary key by (id = ANY ($0))",
				mode, strings.Join(got, ", "))
		}
	}

	// The events sweep checks each event of a batch by lookups: as an
	// anti-join it sorted or hashed every delivered row for each batch.
	if _, err := db.New(&stmt).RetentionSweepEvents(ctx, db.RetentionSweepEventsParams{Before: before, BatchSize: 5000}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode)
		for _, rel := range []string{"deliveries_queue", "deliveries_delivered_default", "deliveries_delivered_plan0"} {
			for _, got := range plan.scansOf(rel) {
				if strings.HasPrefix(got, "Seq Scan") {
					t.Errorf("RetentionSweepEvents (%s): %s read by %s, want index lookups by event", mode, rel, got)
				}
			}
		}
	}

	// A day of minute and 15-minute slots for every endpoint.
	if _, err := pool.Exec(ctx, `INSERT INTO latency_histograms (endpoint_id, resolution_seconds, bucket_start)
		SELECT e.id, r, now() - interval '1 second' * r * i
		FROM endpoints e, (VALUES (60), (900)) v(r), generate_series(1, 1440 / (r / 60)) i;
		ANALYZE latency_histograms`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.New(&stmt).RetentionDeleteHistograms(ctx, db.RetentionDeleteHistogramsParams{Resolutions: []int32{60, 900}, Before: before, BatchSize: 5000}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		got := explain(t, pool, stmt, mode).scansOf("latency_histograms")
		if len(got) != 2 || !slices.Contains(got, "Tid Scan") {
			t.Errorf("RetentionDeleteHistograms (%s): latency_histograms read by %s, want a Tid Scan for the delete", mode, strings.Join(got, ", "))
		}
	}
}

// TestBacklogSummariesPlan: the pipeline summary and the endpoints table's
// queue depths cost the same whatever the backlog. With 100,000 deliveries
// waiting and a few awaiting retry, the count of those awaiting retry
// reads deliveries_retry_log (not every waiting row, which is what a scan
// for status = 'failed' reads without it, 0.1 s at a million), the oldest
// waiting delivery is the first entry of deliveries_waiting_created whose
// endpoint is enabled (as min() over a join it hashed the whole backlog:
// 0.35 s at a million), and each endpoint's depth and dead letters are one
// capped range of deliveries_due and of deliveries_dead_cluster (grouped,
// they read every waiting row, 0.2 s at a million, and every dead letter,
// 0.3-0.46 s at 900,000).
func TestBacklogSummariesPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	seedDeliveries(t, pool, 100, 1000, seed{status: "pending"})
	if _, err := pool.Exec(ctx, `UPDATE deliveries SET status = 'failed', attempt_count = 1 WHERE id % 5000 = 0;
		UPDATE deliveries SET status = 'dead', attempt_count = 5, dead_at = now() WHERE id % 1000 = 1;
		ANALYZE deliveries_queue`); err != nil {
		t.Fatal(err)
	}
	var stmt captured
	if _, err := db.New(&stmt).PipelineStats(ctx, db.PipelineStatsParams{CountCap: 100_000}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode)
		if got := plan.indexScans("deliveries_retry_log"); len(got) != 1 {
			t.Errorf("PipelineStats (%s): deliveries_retry_log read %d times, want once (the count awaiting retry); the queue read by %s",
				mode, len(got), strings.Join(plan.scansOf("deliveries_queue"), ", "))
		}
		if got := plan.indexScans("deliveries_waiting_created"); len(got) != 1 {
			t.Errorf("PipelineStats (%s): deliveries_waiting_created read %d times, want once (the oldest waiting delivery); the queue read by %s",
				mode, len(got), strings.Join(plan.scansOf("deliveries_queue"), ", "))
		}
	}

	if _, err := db.New(&stmt).EndpointQueueDepths(ctx, 1001); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode)
		scans := strings.Join(plan.scansOf("deliveries_queue"), ", ")
		if got := plan.indexScans("deliveries_due"); len(got) != 1 || !strings.Contains(got[0], "(endpoint_id = e.id)") || strings.Contains(scans, "Seq Scan") {
			t.Errorf("EndpointQueueDepths (%s): the queue read by %s, want one range of deliveries_due an endpoint", mode, scans)
		}
	}

	if _, err := db.New(&stmt).EndpointDeadCounts(ctx, db.EndpointDeadCountsParams{CountCap: 1001}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode)
		scans := strings.Join(plan.scansOf("deliveries_queue"), ", ")
		if got := plan.indexScans("deliveries_dead_cluster"); len(got) != 1 || !strings.Contains(got[0], "(endpoint_id = e.id)") || strings.Contains(scans, "Seq Scan") {
			t.Errorf("EndpointDeadCounts (%s): the queue read by %s, want one range of deliveries_dead_cluster an endpoint", mode, scans)
		}
	}

	// The portal's counts of a partner's endpoints, both at once.
	if _, err := db.New(&stmt).PortalEndpointCounts(ctx, db.PortalEndpointCountsParams{PartnerID: 1, CountCap: 1001}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, stmt, mode)
		scans := strings.Join(plan.scansOf("deliveries_queue"), ", ")
		due, dead := plan.indexScans("deliveries_due"), plan.indexScans("deliveries_dead_cluster")
		if len(due) != 1 || len(dead) != 1 || !strings.Contains(due[0], "(endpoint_id = e.id)") || !strings.Contains(dead[0], "(endpoint_id = e.id)") || strings.Contains(scans, "Seq Scan") {
			t.Errorf("PortalEndpointCounts (%s): the queue read by %s, want one range of deliveries_due and one of deliveries_dead_cluster an endpoint", mode, scans)
		}
	}
}

// TestEventPageLookupPlan: a page of the event log filtered by status (or
// by a partner and a status) finds its events' ids in the deliveries'
// indexes and then looks the events up by id. As "id IN (subquery)" the
// planner could walk the whole log newest first until it met them, which
// it did when the deliveries matching were older than the newest events:
// 4.9 s (by status) and 7.6 s (by partner and status) for a page awaiting
// retry behind a million newer events.
func TestEventPageLookupPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	seedDeliveries(t, pool, 10, 20000, seed{status: "pending"})
	// A hundred events an hour older than the rest, their deliveries
	// awaiting retry.
	if _, err := pool.Exec(ctx, `
		WITH old AS (SELECT id FROM events ORDER BY id LIMIT 100)
		UPDATE events SET created_at = now() - interval '1 hour' WHERE id IN (SELECT id FROM old);
		UPDATE deliveries d SET status = 'failed', attempt_count = 1, created_at = ev.created_at
		FROM events ev WHERE ev.id = d.event_id AND ev.created_at < now() - interval '30 minutes';
		ANALYZE`); err != nil {
		t.Fatal(err)
	}
	failed, partner := "failed", int64(1)
	var byStatus, byPartner captured
	if _, err := db.New(&byStatus).EventPageByStatus(ctx, db.EventPageByStatusParams{Status: failed, RowLimit: 51}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	if _, err := db.New(&byPartner).EventPageByEndpoints(ctx, db.EventPageByEndpointsParams{Status: &failed, PartnerID: &partner, RowLimit: 51}); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for name, stmt := range map[string]captured{"EventPageByStatus": byStatus, "EventPageByEndpoints": byPartner} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, pool, stmt, mode)
			if walks := plan.indexScans("events_default_created_at_id_idx"); len(walks) != 0 {
				t.Errorf("%s (%s): events walked in the log's order (events_default_created_at_id_idx), want lookups by id", name, mode)
			}
			var byID bool
			for _, cond := range plan.indexScans("events_default_pkey") {
				byID = byID || strings.HasPrefix(cond, "(id = ANY (")
			}
			if !byID {
				t.Errorf("%s (%s): events_default read by %s, want lookups by id from an array", name, mode, strings.Join(plan.scansOf("events_default"), ", "))
			}
		}
	}
}

// TestDeadLetterClustersPlan: the dead-letter page's clusters cost the
// same however many dead letters they hold: counted from the tallies
// (migration 00027), each cluster reads at most 1,002 of its dead letters
// (its first, its last and its newest 1,000 for the primary error, ranges
// of deliveries_dead_cluster) and no event. Grouping every dead letter
// with its event's payload, as the page did before, read all 12,000 here
// and each one's event (3.5-4.5 s for 300,000).
func TestDeadLetterClustersPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	seedDeliveries(t, pool, 2, 6000, seed{status: "dead"})
	if _, err := pool.Exec(ctx, `UPDATE deliveries SET dead_at = now() - (id % 20) * interval '1 hour', attempt_count = 5,
		last_error_class = 'http_5xx', last_status_code = 500, last_error = 'HTTP 500';
		ANALYZE deliveries_queue`); err != nil {
		t.Fatal(err)
	}
	if n, err := db.New(pool).DeadLetterTallyFold(ctx, 100_000); err != nil || n == 0 {
		t.Fatalf("fold: %d, %v", n, err)
	}
	var stmt captured
	if _, err := db.New(&stmt).DeadLetterClusters(ctx, time.Now().Add(-24*time.Hour).Truncate(time.Hour)); !errors.Is(err, errCaptured) {
		t.Fatalf("want the statement captured, got %v", err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explainWith(t, pool, stmt, mode, "ANALYZE, FORMAT JSON")
		scans := strings.Join(plan.scansOf("deliveries_queue"), ", ")
		if rows := plan.rowsFrom("deliveries_queue"); rows > 2*1002 || strings.Contains(scans, "Seq Scan") || len(plan.indexScans("deliveries_dead_cluster")) == 0 {
			t.Errorf("DeadLetterClusters (%s): %.0f dead letters read by %s; want at most 1,002 a cluster, by deliveries_dead_cluster", mode, rows, scans)
		}
		if got := plan.relationsLike("events"); len(got) != 0 {
			t.Errorf("DeadLetterClusters (%s): reads %v; want no event read", mode, got)
		}
	}
}
