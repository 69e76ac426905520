package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/db/migrations"
)

// benchDB is the database a bench runs on: the one at dsn, or a private
// cluster (fsync on) in dataDir, or in a temporary directory when dataDir is
// empty, migrated and with a pool of maxConns connections (0: pgx's
// default). close releases the pool and stops and removes what it started.
type benchDB struct {
	pool       *pgxpool.Pool
	postmaster int    // the private cluster's pid (0 for dsn), for its CPU time
	url        string // where it is, for processes the bench starts
	close      func()
}

func openBenchDB(ctx context.Context, dsn, dataDir string, maxConns int32, log *slog.Logger, out io.Writer) (benchDB, error) {
	var d benchDB
	var undo []func()
	d.close = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	fail := func(err error) (benchDB, error) {
		d.close()
		return benchDB{}, err
	}
	if dsn == "" {
		dir := dataDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "hlbench")
			if err != nil {
				return fail(err)
			}
			undo = append(undo, func() { os.RemoveAll(tmp) })
			dir = tmp
		}
		fmt.Fprintf(out, "starting a private PostgreSQL in %s (fsync on)...\n", dir)
		cluster, err := embedded.Start(ctx, embedded.Options{DataDir: dir, Logger: log})
		if err != nil {
			return fail(err)
		}
		undo = append(undo, func() { _ = cluster.Stop(context.WithoutCancel(ctx)) })
		dsn = cluster.URL()
		d.postmaster, _ = cluster.PID()
	}
	d.url = dsn
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fail(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	db.ConfigurePool(cfg)
	if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fail(err)
	}
	undo = append(undo, d.pool.Close)
	if err := migrations.Up(ctx, d.pool); err != nil {
		return fail(err)
	}
	return d, nil
}
