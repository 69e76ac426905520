package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
)

// TestEndpointsSlowRowShowsRecentP95: a row flagged slow by its last 10
// minutes shows that P95 beside the 24 h figures, which look healthy; a row
// flagged by its 24 h P95 needs no extra figure.
func TestEndpointsSlowRowShowsRecentP95(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme Retail")
	recent := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://orders.invalid/in"}).ID
	daily := env.createEndpoint(map[string]any{"partner_id": pid, "name": "invoices", "kind": "webhook", "url": "https://invoices.invalid/in"}).ID
	set := func(id int64, p95, recentP95 float64) {
		t.Helper()
		if _, err := env.pool.Exec(context.Background(), `UPDATE endpoint_health SET p50_ms = 100, p95_ms = $2::float8, p99_ms = $2::float8 * 1.2, sample_count = 500, ok_count = 500,
			recent_p95_ms = $3::float8, recent_sample_count = 60 WHERE endpoint_id = $1`, id, p95, recentP95); err != nil {
			t.Fatal(err)
		}
	}
	set(recent, 240, 3400)
	set(daily, 2600, 300)

	op := env.signIn(base, "ops@example.com", "operator")
	_, doc := op.get("/endpoints")
	row := func(id int64) string { return fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"]`, id) }
	if got := doc.Find(row(recent)+" [data-testid=latency-flag]").AttrOr("data-state", ""); got != "slow" {
		t.Fatalf("the recently slow endpoint is flagged %q", got)
	}
	if got := strings.Join(strings.Fields(doc.Find(row(recent)+" [data-testid=recent-p95]").Text()), " "); got != "P95 10 min 3.40 s" {
		t.Fatalf("the recently slow row shows %q, want its 10-minute P95 (3.40 s)", got)
	}
	if n := doc.Find(row(daily) + " [data-testid=recent-p95]").Length(); n != 0 {
		t.Fatalf("the row flagged by its 24 h P95 shows the 10-minute one too")
	}
}

// TestEndpointsCountsCapped: the endpoints table, a partner's page and the
// partner's portal count an endpoint's queue and dead letters up to
// components.Counted and show more as "1,000+" (sorted with the largest);
// smaller counts, an in-flight probe included, are exact.
func TestEndpointsCountsCapped(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme Retail")
	busy := env.createEndpoint(map[string]any{"partner_id": pid, "name": "busy", "kind": "webhook", "url": "https://busy.invalid/in"}).ID
	quiet := env.createEndpoint(map[string]any{"partner_id": pid, "name": "quiet", "kind": "webhook", "url": "https://quiet.invalid/in"}).ID
	env.exec(`INSERT INTO events (id, type, payload) SELECT gen_random_uuid(), 'a.b', '{}' FROM generate_series(1, 1500)`)
	env.exec(`INSERT INTO deliveries (event_id, endpoint_id, max_attempts) SELECT id, $1, 5 FROM events`, busy)
	env.exec(`INSERT INTO deliveries (event_id, endpoint_id, max_attempts) SELECT id, $1, 5 FROM events ORDER BY id LIMIT 7`, quiet)
	env.exec(`UPDATE deliveries SET status = 'failed', attempt_count = 1 WHERE id IN (SELECT id FROM deliveries WHERE endpoint_id = $1 LIMIT 2)`, quiet)
	env.exec(`UPDATE deliveries SET status = 'in_flight', lease_owner = 'w1', lease_expires_at = now() + interval '1 minute'
		WHERE id = (SELECT min(id) FROM deliveries WHERE endpoint_id = $1 AND status = 'pending')`, quiet)
	// The quiet endpoint's other events died there: 1,493 dead letters.
	env.exec(`INSERT INTO deliveries (event_id, endpoint_id, max_attempts, status, attempt_count, dead_at)
		SELECT id, $1, 5, 'dead', 5, now() FROM events ORDER BY id OFFSET 7`, quiet)

	op := env.signIn(env.server(), "ops@example.com", "operator")
	_, doc := op.get("/endpoints/table?sort=queue")
	cell := func(id int64, testid string) string {
		return strings.TrimSpace(doc.Find(fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"] [data-testid=%s]`, id, testid)).Text())
	}
	for _, c := range []struct {
		id           int64
		testid, want string
	}{{busy, "queue-depth", "1,000+"}, {quiet, "queue-depth", "7"}, {quiet, "dead-count", "1,000+"}} {
		if got := cell(c.id, c.testid); got != c.want {
			t.Errorf("endpoint %d's %s reads %q, want %q", c.id, c.testid, got, c.want)
		}
	}
	if first, _ := doc.Find(`[data-testid=endpoint-row]`).First().Attr("data-endpoint-id"); first != fmt.Sprint(busy) {
		t.Errorf("sorted by queue, the first row is endpoint %s, want %d", first, busy)
	}
	_, doc = op.get(fmt.Sprintf("/partners/%d", pid))
	if !strings.Contains(doc.Text(), "1,000+ dead") {
		t.Errorf("the partner's page does not show the quiet endpoint's dead letters as 1,000+")
	}
	// The partner's portal counts the same way.
	_, doc = env.portalSignIn(env.server(), pid, "Acme Retail").get("/portal/")
	for _, c := range []struct {
		id           int64
		testid, want string
	}{{busy, "queue", "1,000+"}, {busy, "dead", "0"}, {quiet, "queue", "7"}, {quiet, "dead", "1,000+"}} {
		sel := fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"] [data-testid=%s]`, c.id, c.testid)
		if got := strings.TrimSpace(doc.Find(sel).Text()); got != c.want {
			t.Errorf("portal: endpoint %d's %s reads %q, want %q", c.id, c.testid, got, c.want)
		}
	}
}

// TestNextProbeAt: the dashboard's "next probe" is the breaker package's.
func TestNextProbeAt(t *testing.T) {
	t.Parallel()
	opened := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    db.EndpointHealth
		want *time.Time
	}{
		{"open: opened plus its cooldown", db.EndpointHealth{State: "open", OpenedAt: &opened, CooldownSeconds: 1200}, func() *time.Time { t := opened.Add(20 * time.Minute); return &t }()},
		{"paused: no automatic probe", db.EndpointHealth{State: "open", Paused: true, OpenedAt: &opened, CooldownSeconds: 300}, nil},
		{"half open: a probe is in flight", db.EndpointHealth{State: "half_open", OpenedAt: &opened, CooldownSeconds: 300}, nil},
		{"closed", db.EndpointHealth{State: "closed", CooldownSeconds: 300}, nil},
		{"open without an opening time", db.EndpointHealth{State: "open", CooldownSeconds: 300}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nextProbeAt(tt.h)
			if (got == nil) != (tt.want == nil) || (got != nil && !got.Equal(*tt.want)) {
				t.Fatalf("nextProbeAt = %v, want %v", got, tt.want)
			}
		})
	}
}
