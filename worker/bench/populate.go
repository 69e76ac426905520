package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Populate shapes: 30 partners of 10 endpoints each. Partners 1-29 share
// the traffic evenly (each event goes to 1-3 of their 290 endpoints);
// partner 30's ten endpoints are quiet ones, each getting one event in
// 10,000, the case that makes a log filtered to one endpoint walk far.
const (
	populatePartners   = 30
	populateEndpoints  = 300
	populateBusy       = 290
	populateSpan       = 8 * 24 * time.Hour // one day past the default 7-day retention
	populateRecentPart = 500                // the newest 1/500 of events are still in the queue
	populateChunk      = 200_000
)

// PopulateResult counts what Populate wrote.
type PopulateResult struct {
	Events, EventKeys, Deliveries, Attempts int64
	Duration                                time.Duration
}

// Populate fills an empty hookline database with n events spread over the
// last 8 days, about 2n deliveries and 3n attempts, the way months of
// traffic leave it: the newest events still queued (pending, awaiting
// retry, in flight), 1 % of older deliveries dead after 5 attempts, the
// rest delivered after 1-3 attempts; every payload with a unique click_id
// and transaction_id in its search keys, every other event with an
// idempotency key. It writes with server-side INSERT ... SELECT in chunks
// of 200,000 events (no round trip per row, the speed of COPY) and keeps
// every index as the migrations define it, so what is measured afterwards
// is what production would have. Endpoints point at .invalid hosts: nothing
// here is ever meant to be delivered.
func Populate(ctx context.Context, pool *pgxpool.Pool, n int64, out io.Writer) (PopulateResult, error) {
	var r PopulateResult
	start := time.Now()
	var existing int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM endpoints").Scan(&existing); err != nil {
		return r, err
	}
	if existing != 0 {
		return r, fmt.Errorf("populate needs an empty database (it has %d endpoints)", existing)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO partners (name) SELECT 'partner ' || g FROM generate_series(1, $1) g`, populatePartners); err != nil {
		return r, err
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO endpoints (partner_id, name, kind, url, method)
		SELECT 1 + (g - 1) / 10, 'endpoint ' || g,
		       CASE WHEN g % 3 = 0 THEN 'postback' ELSE 'webhook' END,
		       CASE WHEN g % 3 = 0 THEN 'https://p' || g || '.invalid/pb?cid={click_id}&tx={transaction_id}'
		            ELSE 'https://w' || g || '.invalid/hook' END,
		       CASE WHEN g % 3 = 0 THEN 'GET' ELSE 'POST' END
		FROM generate_series(1, $1) g`, populateEndpoints); err != nil {
		return r, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO endpoint_health (endpoint_id) SELECT id FROM endpoints`); err != nil {
		return r, err
	}
	// Loading into bare tables and building each index once afterwards is
	// many times faster than keeping random-keyed btrees (event ids) up to
	// date row by row; the definitions are read from the catalog, so the
	// result is exactly what the migrations define.
	restore, err := dropIndexes(ctx, pool)
	if err != nil {
		return r, err
	}
	origin := time.Now().Add(-populateSpan)
	stepUs := populateSpan.Microseconds() / n
	recentFrom := n - n/populateRecentPart
	for lo := int64(1); lo <= n; lo += populateChunk {
		hi := min(lo+populateChunk-1, n)
		args := []any{lo, hi, origin, stepUs, recentFrom}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return r, err
		}
		for _, stmt := range populateSQL {
			tag, err := tx.Exec(ctx, stmt.sql, args...)
			if err != nil {
				_ = tx.Rollback(ctx)
				return r, fmt.Errorf("populate %s [%d, %d]: %w", stmt.name, lo, hi, err)
			}
			*stmt.count(&r) += tag.RowsAffected()
		}
		if err := tx.Commit(ctx); err != nil {
			return r, err
		}
		fmt.Fprintf(out, "  %d/%d events, %d deliveries, %d attempts (%s)\n", hi, n, r.Deliveries, r.Attempts, time.Since(start).Round(time.Second))
	}
	// The identity columns continue after the explicit ids written here.
	fmt.Fprintf(out, "  building indexes and constraints (%s)\n", time.Since(start).Round(time.Second))
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return r, err
	}
	defer conn.Release()
	for _, stmt := range append([]string{"SET maintenance_work_mem = '1GB'"}, restore...) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return r, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for _, stmt := range []string{
		`SELECT setval(pg_get_serial_sequence('deliveries', 'id'), (SELECT max(id) FROM deliveries))`,
		`ANALYZE`,
		// The mark EventLog checks before reusing a database.
		fmt.Sprintf(`COMMENT ON TABLE events IS 'populated: %d events'`, r.Events),
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return r, err
		}
	}
	r.Duration = time.Since(start)
	return r, nil
}

// The chunk statements share their arguments: $1..$2 the event numbers g,
// $3 the time of g = 0, $4 microseconds between events, $5 the first event
// still queued. h(g, k) is a cheap deterministic hash that picks statuses
// and attempt counts; every choice is a function of g, so each statement
// finds the rows of the one before it without reading them back.
var populateSQL = []struct {
	name  string
	count func(*PopulateResult) *int64
	sql   string
}{
	{"events", func(r *PopulateResult) *int64 { return &r.Events }, `
INSERT INTO events (id, type, payload, idempotency_key, created_at, search_keys, search_values)
SELECT md5('ev' || g)::uuid,
       (ARRAY['conversion.approved', 'conversion.pending', 'order.paid', 'order.refunded', 'lead.created'])[1 + g % 5],
       json_build_object('click_id', md5('c' || g), 'transaction_id', 'tx' || g, 'status', 'approved',
                         'payout', (g % 1000) / 10.0, 'currency', 'USD', 'country', 'BR', 'offer_id', g % 500,
                         'sub_id', 'aff' || (g % 7919)),
       CASE WHEN g % 2 = 0 THEN 'ord-' || g END,
       $3::timestamptz + make_interval(secs => g * $4::bigint / 1e6),
       ARRAY['click_id', 'transaction_id'], ARRAY[md5('c' || g), 'tx' || g]
FROM generate_series($1::bigint, $2::bigint) g
-- $5 is used by the other statements
WHERE $5::bigint IS NOT NULL`},
	// Their idempotency keys, where ingest takes them (migration 00022).
	{"event keys", func(r *PopulateResult) *int64 { return &r.EventKeys }, `
INSERT INTO event_keys (idempotency_key, event_id)
SELECT 'ord-' || g, md5('ev' || g)::uuid
FROM generate_series($1::bigint, $2::bigint) g
WHERE g % 2 = 0 AND $3::timestamptz IS NOT NULL AND $4::bigint IS NOT NULL AND $5::bigint IS NOT NULL`},
	{"deliveries", func(r *PopulateResult) *int64 { return &r.Deliveries }, populateDeliveries},
	{"attempts", func(r *PopulateResult) *int64 { return &r.Attempts }, populateAttempts},
}

// populateDeliveries: delivery k of event g goes to busy endpoint
// 1 + (7g + 101k) mod 290 (distinct for k = 0, 1, 2); every 1,000th event
// also goes to one of the quiet endpoints. Its created_at is the event's,
// as fan-out in the ingest transaction leaves it.
const populateDeliveries = `
WITH d AS (
    SELECT g, k, ep,
           $3::timestamptz + make_interval(secs => g * $4::bigint / 1e6) AS at,
           ((g * 2654435761 + k * 40503) % 4294967296) % 1000 AS h,
           g >= $5::bigint AS recent
    FROM generate_series($1::bigint, $2::bigint) g,
         LATERAL (SELECT k, 1 + (7 * g + 101 * k) % 290 AS ep FROM generate_series(0, (g % 3)::int) k
                  UNION ALL
                  SELECT 3, 291 + (g / 1000) % 10 WHERE g % 1000 = 0) x
), s AS (
    SELECT d.*,
           CASE WHEN recent AND h < 200 THEN 'pending'
                WHEN recent AND h < 300 THEN 'failed'
                WHEN recent AND h < 320 THEN 'in_flight'
                WHEN h < 10 THEN 'dead'
                ELSE 'delivered' END AS status
    FROM d
)
INSERT INTO deliveries (id, event_id, endpoint_id, status, attempt_count, max_attempts, next_attempt_at,
                        lease_expires_at, lease_owner, delivered_at, dead_at, last_error, last_error_class,
                        last_status_code, last_response_ms, created_at)
OVERRIDING SYSTEM VALUE
SELECT 4 * g + k, md5('ev' || g)::uuid, ep, status,
       CASE status WHEN 'pending' THEN 0 WHEN 'failed' THEN 1 + h % 2 WHEN 'in_flight' THEN 0 WHEN 'dead' THEN 5
                   ELSE 1 + (h % 20 < 3)::int * 2 + (h % 20 BETWEEN 3 AND 6)::int END,
       5,
       CASE status WHEN 'failed' THEN now() + interval '1 minute' * (1 + h % 30) ELSE at END,
       CASE WHEN status = 'in_flight' THEN now() + interval '1 hour' END,
       CASE WHEN status = 'in_flight' THEN 'populate' END,
       CASE WHEN status = 'delivered' THEN at + interval '30 seconds' * ((h % 20 < 3)::int * 2 + (h % 20 BETWEEN 3 AND 6)::int) + interval '80 ms' END,
       CASE WHEN status = 'dead' THEN at + interval '2 hours' END,
       CASE WHEN status IN ('dead', 'failed') THEN 'HTTP 503' END,
       CASE WHEN status IN ('dead', 'failed') THEN 'http_5xx' END,
       CASE WHEN status IN ('dead', 'failed') THEN 503 WHEN status = 'delivered' THEN 200 END,
       CASE WHEN status IN ('dead', 'failed', 'delivered') THEN 20 + h % 400 END,
       at
FROM s`

// populateAttempts: one row per attempt the delivery above records, the
// last one ok for a delivered delivery, every one a 503 otherwise; 30 s
// apart.
const populateAttempts = `
WITH d AS (
    SELECT id, endpoint_id, status, attempt_count, created_at,
           ((id * 2654435761) % 4294967296) % 1000 AS h
    FROM deliveries
    WHERE id BETWEEN 4 * $1::bigint AND 4 * $2::bigint + 3 AND attempt_count > 0
      AND $3::timestamptz IS NOT NULL AND $4::bigint IS NOT NULL AND $5::bigint IS NOT NULL
)
INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome,
                               status_code, error_class, error, response_excerpt)
SELECT d.id, d.endpoint_id, a, d.created_at + interval '30 seconds' * (a - 1) + interval '5 ms',
       20 + (h * a) % 400,
       CASE WHEN d.status = 'delivered' AND a = d.attempt_count THEN 'ok' ELSE 'transient' END,
       CASE WHEN d.status = 'delivered' AND a = d.attempt_count THEN 200 ELSE 503 END,
       CASE WHEN d.status = 'delivered' AND a = d.attempt_count THEN NULL ELSE 'http_5xx' END,
       CASE WHEN d.status = 'delivered' AND a = d.attempt_count THEN NULL ELSE 'HTTP 503' END,
       CASE WHEN d.status = 'delivered' AND a = d.attempt_count THEN '{"ok":true}' ELSE 'upstream unavailable' END
FROM d, generate_series(1, d.attempt_count) a`

// populateTables are the tables Populate loads.
var populateTables = []string{"events", "event_keys", "deliveries", "delivery_attempts"}

// dropIndexes drops the loaded tables' foreign keys, primary and unique
// constraints and indexes, and returns the statements that recreate them,
// in order.
func dropIndexes(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	var drop, restore []string
	// Foreign keys into or out of the loaded tables go first and come back
	// last; then primary and unique constraints; then plain indexes.
	rows, err := pool.Query(ctx, `
		SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype
		FROM pg_constraint
		WHERE (conrelid = ANY($1::regclass[]) OR confrelid = ANY($1::regclass[])) AND contype IN ('f', 'p', 'u')
		ORDER BY contype = 'f' DESC, conname`, populateTables)
	if err != nil {
		return nil, err
	}
	var fks []string
	for rows.Next() {
		var table, name, def, typ string
		if err := rows.Scan(&table, &name, &def, &typ); err != nil {
			return nil, err
		}
		drop = append(drop, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", table, name))
		add := fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", table, name, def)
		if typ == "f" {
			fks = append(fks, add)
		} else {
			restore = append(restore, add)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = pool.Query(ctx, `
		SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i
		WHERE i.indrelid = ANY($1::regclass[])
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`, populateTables)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return nil, err
		}
		drop = append(drop, "DROP INDEX "+name)
		// A partitioned table's index reads "ON ONLY": built that way it
		// would cover no partition and stay invalid. Built without ONLY it
		// is built on every partition too.
		restore = append(restore, strings.Replace(def, " ON ONLY ", " ON ", 1))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	restore = append(restore, fks...)
	for _, stmt := range drop {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return restore, nil
}
