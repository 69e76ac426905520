package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
)

// TestDeliveriesBecomePartitioned: a database with deliveries, migrated
// from version 20, keeps every delivery with its id: the waiting, leased
// and dead ones in the old table, now deliveries_queue (nothing copied),
// the delivered ones in deliveries_delivered's default partition; new
// deliveries continue the ids, and a delivery recorded as delivered moves
// out of the queue.
func TestDeliveriesBecomePartitioned(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.UpTo(ctx, pool, 20); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO partners (name) VALUES ('p');
		INSERT INTO endpoints (partner_id, name, kind, url) SELECT id, 'e', 'webhook', 'http://127.0.0.1:1/' FROM partners;
		INSERT INTO events (id, type, payload) SELECT gen_random_uuid(), 't', '{}' FROM generate_series(1, 40);
		INSERT INTO deliveries (event_id, endpoint_id, max_attempts, status, delivered_at, dead_at, lease_expires_at, lease_owner)
		SELECT ev.id, e.id, 5, s, CASE WHEN s = 'delivered' THEN now() END, CASE WHEN s = 'dead' THEN now() END,
		       CASE WHEN s = 'in_flight' THEN now() END, CASE WHEN s = 'in_flight' THEN 'w' END
		FROM (SELECT id, (ARRAY['pending', 'failed', 'in_flight', 'dead', 'delivered', 'delivered', 'delivered', 'delivered'])[1 + row_number() OVER () % 8] AS s FROM events) ev,
		     endpoints e`)
	var oldFile int64
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('deliveries')::bigint`).Scan(&oldFile); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}

	var kind string
	var file int64
	if err := pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'deliveries'`).Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("deliveries relkind %q, %v; want p (partitioned)", kind, err)
	}
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('deliveries_queue')::bigint`).Scan(&file); err != nil || file != oldFile {
		t.Fatalf("the old table's file %d, %v; want %d: the queue was copied, not attached", file, err, oldFile)
	}
	var queued, delivered, inDefault, maxID int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tableoid = 'deliveries_queue'::regclass AND status <> 'delivered'),
		count(*) FILTER (WHERE status = 'delivered'),
		count(*) FILTER (WHERE tableoid = 'deliveries_delivered_default'::regclass AND status = 'delivered'),
		max(id) FROM deliveries`).Scan(&queued, &delivered, &inDefault, &maxID); err != nil {
		t.Fatal(err)
	}
	if queued != 20 || delivered != 20 || inDefault != 20 || maxID != 40 {
		t.Fatalf("%d queued in deliveries_queue, %d delivered (%d in the default partition), max id %d; want 20, 20 (20), 40",
			queued, delivered, inDefault, maxID)
	}
	exec(`INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 't', '{}')`)
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO deliveries (event_id, endpoint_id, max_attempts)
		SELECT ev.id, e.id, 5 FROM events ev, endpoints e WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id)
		RETURNING id`).Scan(&id); err != nil || id != 41 {
		t.Fatalf("a new delivery's id %d, %v; want 41", id, err)
	}
	var where string
	if err := pool.QueryRow(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE id = 41
		RETURNING tableoid::regclass::text`).Scan(&where); err != nil || where != "deliveries_delivered_default" {
		t.Fatalf("delivered: in %s, %v; want deliveries_delivered_default", where, err)
	}
}
