package migrations

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// SealPlaintextHeaders is the sealing migration's work, for its test: the
// migration itself runs once per database, before later ones.
var SealPlaintextHeaders = sealPlaintextHeaders

// UpTo applies the migrations up to and including version, as an older
// hookline left a database.
func UpTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	p, err := provider(sqlDB, nil)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
