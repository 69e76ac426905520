package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestConfigurePool: hookline's connections run with JIT off, unless the
// database URL says otherwise.
func TestConfigurePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{dbtest.URL(t), "off"},
		{dbtest.URL(t) + "&jit=on", "on"},
	} {
		cfg, err := pgxpool.ParseConfig(c.url)
		if err != nil {
			t.Fatal(err)
		}
		db.ConfigurePool(cfg)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = pool.QueryRow(ctx, "SHOW jit").Scan(&jit)
		pool.Close()
		if err != nil || jit != c.want {
			t.Errorf("jit %q, %v; want %s", jit, err, c.want)
		}
	}
}

// TestConfigureSessionSQL: the settings the URL does not set become one
// simple query.
func TestConfigureSessionSQL(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig("postgres://u@db.invalid/h")
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(cfg)
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; set || cfg.ConnConfig.AfterConnect == nil {
		t.Fatalf("jit as a startup parameter (%v) or no SET once connected", cfg.ConnConfig.RuntimeParams)
	}
	// The config's copies, which the worker's own sessions use, keep it.
	if cfg.ConnConfig.Copy().AfterConnect == nil {
		t.Fatal("a copy of the config lost the SET")
	}
}
