package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDropStaleTemplates: the clean-up before a new template is built
// drops templates of days before yesterday, of any schema version, and
// keeps yesterday's and other schema versions' from today, which a test
// binary of another checkout sharing the cluster may be cloning (dropping
// those failed a clean clone's tests run beside a working tree's).
func TestDropStaleTemplates(t *testing.T) {
	admin, err := server()
	if err != nil {
		unavailable(t, err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // after the databases' clean-ups below
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", templateLock)

	today := time.Now().UTC()
	day := func(d int) string {
		return "hookline_template_otherschema_" + today.AddDate(0, 0, d).Format("20060102")
	}
	keep := []string{day(0), day(-1)}
	gone := []string{day(-3), "hookline_template_otherschema_" + today.Format("20060102") + "_build"}
	for _, name := range append(keep, gone...) {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE template0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(name)) })
	}
	if err := dropStaleTemplates(ctx, conn, today); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(keep, gone...) {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if want := name == keep[0] || name == keep[1]; exists != want {
			t.Errorf("%s: exists %v after the clean-up, want %v", name, exists, want)
		}
	}
}
