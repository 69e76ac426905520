package migrations_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/db/secretbox"
)

// TestPlaintextHeadersSealedByMigration: the migration is recorded on every
// database; header values stored in plain text by an old version are sealed
// by its work with the key, and without the key it refuses rather than
// leave them in clear.
func TestPlaintextHeadersSealedByMigration(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM goose_db_version WHERE version_id = 15 AND is_applied)`).Scan(&recorded); err != nil || !recorded {
		t.Fatalf("the sealing migration is not recorded: %v, %v", recorded, err)
	}

	var id int64
	if err := pool.QueryRow(ctx, `
		WITH p AS (INSERT INTO partners (name) VALUES ('Acme') RETURNING id)
		INSERT INTO endpoints (partner_id, name, kind, url, event_types, max_attempts, headers)
		SELECT p.id, 'orders', 'webhook', 'http://127.0.0.1:9/in', '{order.created}', 5, '{"Authorization": "Bearer old"}'
		FROM p RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	seal := func(box *secretbox.Box) error {
		tx, err := sqlDB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrations.SealPlaintextHeaders(ctx, tx, box); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}

	if err := seal(nil); err == nil || !strings.Contains(err.Error(), "secret key") {
		t.Fatalf("plain-text values without a key: %v, want a refusal naming the secret key", err)
	}
	if raw := headersOf(t, pool, id); !strings.Contains(string(raw), "Bearer old") {
		t.Fatalf("a refused migration changed the row: %s", raw)
	}
	if err := seal(box); err != nil {
		t.Fatal(err)
	}
	raw := headersOf(t, pool, id)
	if strings.Contains(string(raw), "Bearer old") {
		t.Fatalf("still in clear: %s", raw)
	}
	if plain, err := box.OpenHeaders(id, raw); err != nil || plain["Authorization"] != "Bearer old" {
		t.Fatalf("opened %v, %v", plain, err)
	}
	if err := seal(nil); err != nil {
		t.Fatalf("nothing left to seal, no key: %v", err)
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
