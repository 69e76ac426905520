package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db/dbtest"
)

// deliversThrough makes an API key, a partner and a webhook endpoint on a
// loopback receiver with the running process p, posts n events to its API
// and waits for the receiver to have every one of them.
func deliversThrough(t *testing.T, env map[string]string, p *process, n int) {
	t.Helper()
	var got atomic.Int64
	seen := make(chan string, n)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select {
		case seen <- r.Header.Get("Webhook-Id"):
		default:
		}
	}))
	defer rcv.Close()
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "through"))
	status, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, partner)
	}
	if status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"}); status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	for i := range n {
		if status, ev := api(t, p.addr, key, "POST", "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": i}}); status != 202 {
			t.Fatalf("event %d: %d %v", i, status, ev)
		}
	}
	waitUntil(t, 30*time.Second, "every event delivered", func() bool { return got.Load() >= int64(n) })
}

// TestServeBehindPgBouncerSession: behind PgBouncer in session mode,
// hookline starts (no startup parameter PgBouncer refuses), and events
// posted to the API are delivered, with nothing set in PgBouncer for it.
func TestServeBehindPgBouncerSession(t *testing.T) {
	t.Parallel()
	b := dbtest.PgBouncer(t, "session")
	url := b.URL(t, dbtest.URL(t))
	env := serveEnv(t, url)
	p := start(t, env, "serve")
	deliversThrough(t, env, p, 20)
	if !strings.Contains(metrics(t, p.addr), "hookline_worker_shards_owned 256") {
		t.Error("the worker does not own every shard behind the bouncer")
	}
}

// TestServeBehindPgBouncerTransaction: behind PgBouncer in transaction
// mode, hookline refuses to start with a message that names the setting it
// needs; given HOOKLINE_DIRECT_DATABASE_URL, its LISTEN, advisory locks and
// migrations go there, the rest through the bouncer, and events are
// delivered.
func TestServeBehindPgBouncerTransaction(t *testing.T) {
	t.Parallel()
	b := dbtest.PgBouncer(t, "transaction")
	direct := dbtest.URL(t)
	env := serveEnv(t, b.URL(t, direct))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "HOOKLINE_DIRECT_DATABASE_URL") || !strings.Contains(err.Error(), "pool_mode = transaction") {
		t.Fatalf("serve behind a transaction pooler without a direct URL: %v; want a refusal naming HOOKLINE_DIRECT_DATABASE_URL", err)
	}

	env["HOOKLINE_DIRECT_DATABASE_URL"] = direct
	p := start(t, env, "serve")
	deliversThrough(t, env, p, 50)
	if !strings.Contains(metrics(t, p.addr), "hookline_worker_shards_owned 256") {
		t.Error("the worker does not own every shard")
	}
	// The sessions that must keep theirs are on the direct connection:
	// the worker's LISTEN and its liveness lock.
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var listening, locks int
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN hookline_deliveries'),
		(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&listening, &locks); err != nil {
		t.Fatal(err)
	}
	if listening != 1 || locks < 257 {
		t.Fatalf("%d sessions listening, %d advisory locks; want 1 and the liveness lock with 256 shard locks", listening, locks)
	}

	// The direct URL must keep its session too.
	p.stop()
	env["HOOKLINE_DIRECT_DATABASE_URL"] = env["DATABASE_URL"]
	err = run(ctx, []string{"serve"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "HOOKLINE_DIRECT_DATABASE_URL goes through a connection pooler") {
		t.Fatalf("a direct URL pooled per transaction: %v", err)
	}
}
