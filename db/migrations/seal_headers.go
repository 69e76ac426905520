package migrations

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/hookline/hookline/db/secretbox"
)

// sealHeadersVersion seals custom header values that versions of hookline
// before sealing them stored in plain text. It is a Go migration because sealing
// needs the secret key; on a database with nothing to seal (every new one)
// it needs no key at all.
const sealHeadersVersion = 15

// errNeedKey: plain-text header values exist and no key was given.
var errNeedKey = errors.New("custom header values stored in plain text must be sealed, which needs the secret key (HOOKLINE_SECRET_KEY or the data directory's secret.key)")

func sealHeaders(box *secretbox.Box) *goose.Migration {
	return goose.NewGoMigration(sealHeadersVersion, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		return sealPlaintextHeaders(ctx, tx, box)
	}}, nil)
}

// sealPlaintextHeaders seals every endpoint's custom header values stored in
// plain text, in tx. Without a box it fails only if there is any.
func sealPlaintextHeaders(ctx context.Context, tx *sql.Tx, box *secretbox.Box) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, headers FROM endpoints WHERE headers <> '{}'::jsonb ORDER BY id FOR UPDATE`)
	if err != nil {
		return fmt.Errorf("read stored headers: %w", err)
	}
	type stored struct {
		id      int64
		headers json.RawMessage
	}
	var plain []stored
	for rows.Next() {
		var r stored
		if err := rows.Scan(&r.id, &r.headers); err != nil {
			rows.Close()
			return err
		}
		isPlain, err := secretbox.Plaintext(r.headers)
		if err != nil {
			rows.Close()
			return fmt.Errorf("endpoint %d: %w", r.id, err)
		}
		if isPlain {
			plain = append(plain, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(plain) > 0 && box == nil {
		return errNeedKey
	}
	for _, r := range plain {
		values, err := box.OpenHeaders(r.id, r.headers)
		if err != nil {
			return fmt.Errorf("endpoint %d: %w", r.id, err)
		}
		sealed, err := box.SealHeaders(r.id, values)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE endpoints SET headers = $2 WHERE id = $1`, r.id, sealed); err != nil {
			return fmt.Errorf("endpoint %d: %w", r.id, err)
		}
	}
	return nil
}
