package web

import (
	"context"
	"testing"
	"time"
)

// TestWatchAlertsFiresResolvesAndAnnouncesClusters: a dead-letter rise
// fires its alert once and a new cluster is announced once, however often
// the watcher looks; when the rise is over the alert resolves.
func TestWatchAlertsFiresResolvesAndAnnouncesClusters(t *testing.T) {
	env := newEnv(t)
	ctx := context.Background()
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "conversions", "kind": "webhook", "url": "https://conv.invalid/in"}).ID
	for range 3 {
		var id string
		if err := env.pool.QueryRow(ctx, "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'conversion.approved', '{}') RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		env.exec(`INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, dead_at, last_error, last_error_class, last_status_code)
			VALUES ($1, $2, 'dead', 1, 1, $3, 'HTTP 500', 'http_status', 500)`, id, ep, time.Now().Add(-time.Minute))
	}
	count := func(kind, subject string) int {
		t.Helper()
		var n int
		if err := env.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE kind = $1 AND subject LIKE $2`, kind, subject).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 2 {
		if err := env.srv.watchAlertsOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count("alert.fired", "dead_letters_rising"); n != 1 {
		t.Fatalf("dead_letters_rising fired %d times, want 1", n)
	}
	if n := count("dead_letters.new_cluster", "%:http_status:500"); n != 1 {
		t.Fatalf("new cluster announced %d times, want 1", n)
	}
	env.exec(`UPDATE deliveries SET dead_at = now() - interval '5 hours' WHERE endpoint_id = $1`, ep)
	if err := env.srv.watchAlertsOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count("alert.resolved", "dead_letters_rising"); n != 1 {
		t.Fatalf("dead_letters_rising resolved %d times, want 1", n)
	}
}
