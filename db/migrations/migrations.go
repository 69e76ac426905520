// Package migrations owns hookline's schema: numbered, forward-only SQL files
// (also the schema sqlc generates from), and Go migrations where a change of
// stored data needs hookline's code (seal_headers.go), applied at start under
// an advisory lock, so several replicas starting at once migrate exactly
// once.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// Option configures Up.
type Option func(*options)

type options struct{ box *secretbox.Box }

// WithSecretBox gives the migrations that rewrite sealed data the box that
// seals it.
func WithSecretBox(box *secretbox.Box) Option { return func(o *options) { o.box = box } }

// Up applies every pending migration. goose's session locker holds a
// PostgreSQL advisory lock for the whole run.
func Up(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	p, err := provider(sqlDB, o.box)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Pending reports whether migrations remain to be applied (used by /readyz).
func Pending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	p, err := provider(sqlDB, nil)
	if err != nil {
		return false, err
	}
	has, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check migrations: %w", err)
	}
	return has, nil
}

func provider(sqlDB *sql.DB, box *secretbox.Box) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, files,
		goose.WithSessionLocker(locker), goose.WithGoMigrations(sealHeaders(box)))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}
