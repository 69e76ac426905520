package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestSharesSessions: a direct connection and PgBouncer in session mode
// keep a session per client; PgBouncer in transaction mode is seen sharing
// them, every time.
func TestSharesSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.URL(t)
	for _, c := range []struct {
		name string
		url  string
		want bool
	}{
		{"direct", url, false},
		{"pgbouncer session", dbtest.PgBouncer(t, "session").URL(t, url), false},
		{"pgbouncer transaction", dbtest.PgBouncer(t, "transaction").URL(t, url), true},
	} {
		cfg, err := pgx.ParseConfig(c.url)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			got, err := db.SharesSessions(ctx, cfg)
			if err != nil || got != c.want {
				t.Fatalf("%s: shares sessions %v, %v; want %v", c.name, got, err, c.want)
			}
		}
	}
}
