package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDemoReset: "hookline demo --reset" deletes what an earlier demo left
// (its database and keys) and starts from nothing.
func TestDemoReset(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dir := emptyDataDir(t)
	env := map[string]string{"HOOKLINE_DATA_DIR": dir, "HOOKLINE_ADDR": freeAddr(t)}
	demoEnv := map[string]string{"HOOKLINE_DATA_DIR": filepath.Join(dir, "demo")}
	t.Cleanup(func() { stopPostmaster(t, filepath.Join(dir, "demo", "pg", "postmaster.pid")) })

	// count counts the API keys with this name in the running demo's database.
	count := func(name string) int {
		t.Helper()
		url := strings.TrimSpace(command(t, demoEnv, "", "db", "url"))
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE name = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// What an earlier demo left: its database, with a key in it (the
	// command starts the demo's cluster, and stops it again).
	command(t, demoEnv, "", "apikey", "create", "--name", "left from an earlier demo")

	reset := start(t, env, "demo", "--reset")
	if n := count("left from an earlier demo"); n != 0 {
		t.Fatalf("demo --reset kept the earlier demo's data: %d keys", n)
	}
	if n := count("demo stream"); n != 1 {
		t.Fatalf("after demo --reset: %d demo stream keys, want the new run's only", n)
	}
	reset.stop()
}
