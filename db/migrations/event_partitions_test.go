package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
)

// TestEventsBecomePartitioned: a database with events, migrated from
// version 21, keeps them all in one partition, the old table attached
// without a copy, their idempotency keys moved to event_keys, where they
// still refuse a second event; a new event, with no span partition made
// yet, goes to the default partition.
func TestEventsBecomePartitioned(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.UpTo(ctx, pool, 21); err != nil {
		t.Fatal(err)
	}
	// UUIDv7s of the last 30 minutes; every third with a key.
	if _, err := pool.Exec(ctx, `INSERT INTO events (id, type, payload, idempotency_key, created_at)
		SELECT encode(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch FROM t) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid,
		       't', '{}', CASE WHEN g % 3 = 0 THEN 'key-' || g END, t
		FROM generate_series(1, 30) g, LATERAL (SELECT now() - make_interval(mins => g) AS t) x`); err != nil {
		t.Fatal(err)
	}
	var oldFile int64
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('events')::bigint`).Scan(&oldFile); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}

	var kind string
	var file int64
	if err := pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'events'`).Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("events relkind %q, %v; want p (partitioned)", kind, err)
	}
	if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('events_before_partitions')::bigint`).Scan(&file); err != nil || file != oldFile {
		t.Fatalf("the old table's file %d, %v; want %d: the events were copied, not attached", file, err, oldFile)
	}
	var kept, keys, keysOfEvents int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE tableoid = 'events_before_partitions'::regclass),
		(SELECT count(*) FROM event_keys),
		(SELECT count(*) FROM event_keys k JOIN events ev ON ev.id = k.event_id AND ev.idempotency_key = k.idempotency_key)`).Scan(&kept, &keys, &keysOfEvents); err != nil {
		t.Fatal(err)
	}
	if kept != 30 || keys != 10 || keysOfEvents != 10 {
		t.Fatalf("%d events in events_before_partitions, %d keys (%d of their events); want 30, 10 (10)", kept, keys, keysOfEvents)
	}

	q := db.New(pool)
	used, fresh := "key-3", "key-new"
	// Two seconds from now: past the end of events_before_partitions, a
	// second or less after the migration.
	id, _ := uuid.NewV7()
	ms := uint64(time.Now().Add(2 * time.Second).UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	again, _ := uuid.NewV7()
	var stored []bool
	q.EventInsertBatch(ctx, []db.EventInsertBatchParams{
		{ID: id, Type: "t", Payload: []byte(`{}`), IdempotencyKey: &fresh},
		{ID: again, Type: "t", Payload: []byte(`{}`), IdempotencyKey: &used},
	}).QueryRow(func(_ int, _ uuid.UUID, err error) {
		if err != nil && !db.NoRows(err) {
			t.Fatal(err)
		}
		stored = append(stored, err == nil)
	})
	if len(stored) != 2 || !stored[0] || stored[1] {
		t.Fatalf("stored %v; want the new key's event, not the used key's", stored)
	}
	var where string
	if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM events WHERE id = $1`, id).Scan(&where); err != nil || where != "events_default" {
		t.Fatalf("a new event in %s, %v; want events_default", where, err)
	}
}
