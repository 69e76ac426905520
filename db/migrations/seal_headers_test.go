package migrations_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/worker/secretbox"
)

// TestPlaintextHeadersSealedByMigration: header values stored in plain text
// by an old version are sealed when the migration that seals them runs
// with the key; without the key it refuses rather than leave them in
// clear, and a database with nothing to seal needs no key.
func TestPlaintextHeadersSealedByMigration(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	forget := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = 15`); err != nil {
			t.Fatal(err)
		}
	}

	forget()
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("nothing to seal, no key: %v", err)
	}

	var id int64
	if err := pool.QueryRow(ctx, `
		WITH p AS (INSERT INTO partners (name) VALUES ('Acme') RETURNING id)
		INSERT INTO endpoints (partner_id, name, kind, url, event_types, max_attempts, headers)
		SELECT p.id, 'orders', 'webhook', 'http://127.0.0.1:9/in', '{order.created}', 5, '{"Authorization": "Bearer old"}'
		FROM p RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	forget()
	if err := migrations.Up(ctx, pool); err == nil || !strings.Contains(err.Error(), "secret key") {
		t.Fatalf("plain-text values without a key: %v, want a refusal naming the secret key", err)
	}
	if raw := headersOf(t, pool, id); !strings.Contains(string(raw), "Bearer old") {
		t.Fatalf("a refused migration changed the row: %s", raw)
	}

	if err := migrations.Up(ctx, pool, migrations.WithSecretBox(box)); err != nil {
		t.Fatal(err)
	}
	raw := headersOf(t, pool, id)
	if strings.Contains(string(raw), "Bearer old") {
		t.Fatalf("still in clear: %s", raw)
	}
	if plain, err := box.OpenHeaders(id, raw); err != nil || plain["Authorization"] != "Bearer old" {
		t.Fatalf("opened %v, %v", plain, err)
	}
	if pending, err := migrations.Pending(ctx, pool); err != nil || pending {
		t.Fatalf("pending after the seal: %v, %v", pending, err)
	}
}

func headersOf(t *testing.T, pool *pgxpool.Pool, id int64) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	if err := pool.QueryRow(context.Background(), `SELECT headers FROM endpoints WHERE id = $1`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}
