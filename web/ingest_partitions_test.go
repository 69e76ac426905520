package web

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestIngestMeetsANewPartition: an event PostgreSQL routes to events'
// default partition while a partition for its time is being made (the
// worker's makePartition holds the default partition to move its rows)
// is refused once that partition is attached; the ingest stores it again,
// into the new partition, and answers 202, not a 4xx that blames the
// event.
func TestIngestMeetsANewPartition(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "http://127.0.0.1:1/in"})
	ctx := context.Background()
	// The events kept when events was partitioned end where the new
	// partition starts, a second or less after the database was made.
	var from string
	if err := env.pool.QueryRow(ctx, `SELECT (regexp_match(pg_get_expr(relpartbound, oid), 'TO \(''([^'']+)''\)'))[1]
		FROM pg_class WHERE relname = 'events_before_partitions'`).Scan(&from); err != nil {
		t.Fatal(err)
	}
	env.waitDB("now past the events kept before partitions", 2*time.Second,
		`SELECT $1::uuid < encode(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid`, from)

	tx, err := env.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, sql := range []string{
		"LOCK TABLE events_default IN ACCESS EXCLUSIVE MODE",
		"CREATE TABLE events_now (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var id string
	go func() {
		defer close(done)
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{}})
		if rec.Code != http.StatusAccepted {
			t.Errorf("ingest meeting a new partition: %d %s, want 202", rec.Code, rec.Body.String())
			return
		}
		id = decodeBody[acceptedBody](t, rec).ID
	}()
	env.waitDB("the ingest to wait for the default partition", 10*time.Second,
		`SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	// To the UUIDv7s of an hour from now.
	var to string
	if err := tx.QueryRow(ctx, `SELECT encode(overlay(uuid_send('00000000-0000-0000-0000-000000000000'::uuid)
		placing substring(int8send(floor(extract(epoch FROM now() + interval '1 hour') * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')`).Scan(&to); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE events ATTACH PARTITION events_now FOR VALUES FROM ('"+from+"') TO ('"+to+"')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if id == "" {
		return
	}
	env.waitDB("the event in the new partition", time.Second,
		`SELECT tableoid = 'events_now'::regclass FROM events WHERE id = $1`, id)
}
