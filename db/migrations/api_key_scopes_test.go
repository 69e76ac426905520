package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
)

// TestAPIKeysBecomeAdmin: keys made before scopes, revoked ones too, are
// admin keys bound to no partner after migration 00028, so no producer
// breaks; the scope is one of three, an admin key is never bound, and
// every partition of events gains the posting key's column.
func TestAPIKeysBecomeAdmin(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.UpTo(ctx, pool, 27); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO api_keys (name, prefix, key_hash, created_by, revoked_at)
		VALUES ('producer', 'hk_aaaaaaaa', '\x01', 'cli', NULL), ('old', 'hk_bbbbbbbb', '\x02', 'cli', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO partners (name) VALUES ('Acme')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 't', '{}')`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}

	var admins, bound int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE scope = 'admin'), count(partner_id) FROM api_keys`).Scan(&admins, &bound); err != nil {
		t.Fatal(err)
	}
	if admins != 2 || bound != 0 {
		t.Fatalf("%d admin keys, %d bound to a partner; want 2, 0", admins, bound)
	}
	var keyless int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE api_key_id IS NULL`).Scan(&keyless); err != nil || keyless != 1 {
		t.Fatalf("%d events without a key, %v; want the old one", keyless, err)
	}
	var partitionsWithout int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i
		WHERE i.inhparent = 'events'::regclass
		  AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.inhrelid AND a.attname = 'api_key_id' AND NOT a.attisdropped)`).Scan(&partitionsWithout); err != nil || partitionsWithout != 0 {
		t.Fatalf("%d partitions of events without api_key_id, %v", partitionsWithout, err)
	}

	for name, stmt := range map[string]string{
		"an unknown scope":      `INSERT INTO api_keys (name, prefix, key_hash, scope) VALUES ('x', 'hk_x', '\x03', 'root')`,
		"an admin key bound":    `INSERT INTO api_keys (name, prefix, key_hash, scope, partner_id) VALUES ('x', 'hk_x', '\x04', 'admin', (SELECT id FROM partners))`,
		"a key bound to no one": `INSERT INTO api_keys (name, prefix, key_hash, scope, partner_id) VALUES ('x', 'hk_x', '\x05', 'read', 424242)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err == nil {
			t.Errorf("%s is stored", name)
		}
	}
	var scope string
	if err := pool.QueryRow(ctx, `INSERT INTO api_keys (name, prefix, key_hash, scope, partner_id)
		VALUES ('bound', 'hk_y', '\x06', 'ingest', (SELECT id FROM partners)) RETURNING scope`).Scan(&scope); err != nil || scope != "ingest" {
		t.Fatalf("an ingest key bound to a partner: %q, %v", scope, err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO api_keys (name, prefix, key_hash) VALUES ('plain', 'hk_z', '\x07') RETURNING scope`).Scan(&scope); err != nil || scope != "admin" {
		t.Fatalf("a key without a scope: %q, %v; want admin", scope, err)
	}
}
