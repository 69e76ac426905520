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
	t.Parallel()
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

// TestWatchAlertsLooksForNewClustersSinceItsLastLook: the watch reads whole
// clusters only when a dead letter since its previous look (less a minute)
// belongs to one it has not announced. A cluster whose announcement is gone
// but whose dead letters are all older than that is not announced again;
// a new dead letter of it is, and so is every cluster of the hour then.
func TestWatchAlertsLooksForNewClustersSinceItsLastLook(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "conversions", "kind": "webhook", "url": "https://conv.invalid/in"}).ID
	other := env.createEndpoint(map[string]any{"partner_id": pid, "name": "refunds", "kind": "webhook", "url": "https://refunds.invalid/in"}).ID
	dead := func(endpoint int64, code int, at time.Time) {
		t.Helper()
		var id string
		if err := env.pool.QueryRow(ctx, "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'conversion.approved', '{}') RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		env.exec(`INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, dead_at, last_error, last_error_class, last_status_code)
			VALUES ($1, $2, 'dead', 1, 1, $3, 'HTTP error', 'http_status', $4)`, id, endpoint, at, code)
	}
	announced := func(code int) int {
		t.Helper()
		var n int
		if err := env.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE kind = 'dead_letters.new_cluster' AND subject LIKE '%:http_status:' || $1::int`, code).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	look := func() {
		t.Helper()
		if err := env.srv.watchAlertsOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}

	dead(ep, 500, time.Now().Add(-10*time.Minute))
	look()
	if n := announced(500); n != 1 {
		t.Fatalf("the first look announced the 500 cluster %d times, want 1", n)
	}
	// The announcement is gone (as if pruned); its dead letters are older
	// than the last look, and a 502 cluster of another endpoint too, which
	// this replica's looks never saw unannounced.
	env.exec(`DELETE FROM notifications WHERE kind = 'dead_letters.new_cluster'`)
	dead(other, 502, time.Now().Add(-10*time.Minute))
	look()
	if n, m := announced(500), announced(502); n != 0 || m != 0 {
		t.Fatalf("with nothing dead since the last look, announced 500 %d and 502 %d times, want none", n, m)
	}
	// A new dead letter of the 500 cluster: it is unannounced, so the
	// watch reads the hour's clusters and announces both.
	dead(ep, 500, time.Now())
	look()
	if n, m := announced(500), announced(502); n != 1 || m != 1 {
		t.Fatalf("after a new dead letter, announced 500 %d and 502 %d times, want 1 each", n, m)
	}
}
