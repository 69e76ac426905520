package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
)

// TestAttemptsBecomePartitioned: a database with attempts, migrated from
// version 17, keeps every attempt and its id in the old table, now the
// first partition (nothing copied), and new attempts continue its ids; a
// day no partition covers goes to the default partition.
func TestAttemptsBecomePartitioned(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.UpTo(ctx, pool, 17); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
		SELECT g, 1, 1, now() - g * interval '1 hour', 12.5, 'ok' FROM generate_series(1, 40) g`)
	var oldFile int64
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('delivery_attempts')::bigint`).Scan(&oldFile); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}

	var kind string
	var file, inOld, maxOld int64
	if err := pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'delivery_attempts'`).Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("delivery_attempts relkind %q, %v; want p (partitioned)", kind, err)
	}
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('delivery_attempts_until_partitioned')::bigint`).Scan(&file); err != nil || file != oldFile {
		t.Fatalf("the old table's file %d, %v; want %d: its rows were copied, not attached", file, err, oldFile)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*), max(id) FROM delivery_attempts WHERE tableoid = 'delivery_attempts_until_partitioned'::regclass`).Scan(&inOld, &maxOld); err != nil || inOld != 40 || maxOld != 40 {
		t.Fatalf("attempts in the first partition %d (max id %d), %v; want 40 (40)", inOld, maxOld, err)
	}
	var id int64
	var where string
	if err := pool.QueryRow(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
		VALUES (41, 1, 1, now() + interval '3 days', 1, 'ok') RETURNING id, tableoid::regclass::text`).Scan(&id, &where); err != nil {
		t.Fatal(err)
	}
	if id != 41 || where != "delivery_attempts_default" {
		t.Fatalf("a new attempt three days ahead: id %d in %s; want 41 in delivery_attempts_default", id, where)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
		VALUES (42, 1, 1, now(), 1, 'ok') RETURNING tableoid::regclass::text`).Scan(&where); err != nil || where != "delivery_attempts_until_partitioned" {
		t.Fatalf("a new attempt today went to %s, %v; want the first partition, which covers today", where, err)
	}
}

// TestNewDatabaseHasDayPartitions: on a database without attempts the old
// table is dropped, and the migration makes the partitions of the day it
// ran and the two after it, one day each, beside the default partition.
func TestNewDatabaseHasDayPartitions(t *testing.T) {
	pool := dbtest.Pool(t)
	var parts []string
	var days int
	if err := pool.QueryRow(context.Background(), `
		SELECT array_agg(inhrelid::regclass::text ORDER BY inhrelid::regclass::text),
		       count(*) FILTER (WHERE pg_get_expr(c.relpartbound, c.oid) ~ '^FOR VALUES FROM \(''[^'']+''\) TO \(''[^'']+''\)$'
		                          AND inhrelid::regclass::text = 'delivery_attempts_' || to_char((regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz AT TIME ZONE 'UTC', 'YYYYMMDD')
		                          AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
		                            - (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz = interval '1 day')
		FROM pg_inherits JOIN pg_class c ON c.oid = inhrelid
		WHERE inhparent = 'delivery_attempts'::regclass`).Scan(&parts, &days); err != nil {
		t.Fatal(err)
	}
	if len(parts) != 4 || days != 3 || parts[3] != "delivery_attempts_default" {
		t.Fatalf("partitions %v (%d of them one named day each), want three days and delivery_attempts_default", parts, days)
	}
}
