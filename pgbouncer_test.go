package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	b := dbtest.PgBouncer(t, "session")
	url := b.URL(t, dbtest.URL(t))
	env := serveEnv(t, url)
	p := start(t, env, "serve")
	deliversThrough(t, env, p, 20)
	if !strings.Contains(metrics(t, p.addr), "hookline_worker_shards_owned 256") {
		t.Error("the worker does not own every shard behind the bouncer")
	}
}
