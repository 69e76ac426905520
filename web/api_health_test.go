package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// seedDead inserts n dead deliveries for an endpoint, dead at the given
// times, with a class and status code (as the worker would leave them).
func (e *testEnv) seedDead(endpointID int64, class string, code int, payout string, at ...time.Time) {
	e.t.Helper()
	ctx := context.Background()
	for _, t := range at {
		payload := `{"click_id":"c"}`
		if payout != "" {
			payload = fmt.Sprintf(`{"click_id":"c","payout":%s}`, payout)
		}
		var id string
		if err := e.pool.QueryRow(ctx, "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'conversion.approved', $1) RETURNING id", payload).Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		var codePtr *int
		if code != 0 {
			codePtr = &code
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, dead_at, last_error, last_error_class, last_status_code)
			VALUES ($1, $2, 'dead', 5, 5, $3, $4, $5, $6)`, id, endpointID, t, "HTTP "+fmt.Sprint(code), class, codePtr); err != nil {
			e.t.Fatal(err)
		}
	}
}

func times(start time.Time, n int, step time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = start.Add(time.Duration(i) * step)
	}
	return out
}

type clustersBody struct {
	Clusters []cluster `json:"clusters"`
}

func TestAPIDeadLetterClustersAndReplay(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := func(name string) int64 {
		return env.createEndpoint(map[string]any{"partner_id": pid, "name": name, "kind": "webhook", "url": "https://" + name + ".example/"}).ID
	}
	outage, auth, limited, gone, trickle := ep("outage"), ep("auth"), ep("limited"), ep("gone"), ep("trickle")
	now := time.Now()
	env.seedDead(outage, "http_status", 503, "10.5", times(now.Add(-3*time.Hour), 40, 30*time.Second)...)
	env.seedDead(auth, "http_status", 401, `"2.50"`, times(now.Add(-2*time.Hour), 5, time.Minute)...)
	env.seedDead(limited, "http_status", 429, "", times(now.Add(-time.Hour), 4, time.Minute)...)
	env.seedDead(gone, "http_status", 410, "", now.Add(-10*time.Minute))
	env.seedDead(trickle, "timeout", 0, "", times(now.Add(-20*time.Hour), 6, 3*time.Hour)...)
	env.seedDead(outage, "http_status", 503, "", now.Add(-30*time.Hour)) // outside 24 h

	rec := env.do(http.MethodGet, "/api/v1/dead-letters/clusters?hours=24", nil)
	mustStatus(t, rec, http.StatusOK)
	byEndpoint := map[int64]cluster{}
	for _, c := range decodeBody[clustersBody](t, rec).Clusters {
		byEndpoint[c.EndpointID] = c
	}
	expect := []struct {
		id      int64
		pattern string
		count   int64
	}{{outage, "outage_burst", 40}, {auth, "credentials", 5}, {limited, "rate_limited", 4}, {gone, "gone", 1}, {trickle, "trickle", 6}}
	for _, x := range expect {
		c, ok := byEndpoint[x.id]
		if !ok {
			t.Fatalf("no cluster for endpoint %d", x.id)
		}
		if c.Diagnosis.Pattern != x.pattern || c.Count != x.count || c.Diagnosis.Action == "" {
			t.Errorf("endpoint %d: pattern %q count %d, want %q %d (%+v)", x.id, c.Diagnosis.Pattern, c.Count, x.pattern, x.count, c.Diagnosis)
		}
	}
	if c := byEndpoint[outage]; c.PayoutAtRisk != 420 || c.Key != fmt.Sprintf("%d:http_status:503", outage) {
		t.Errorf("outage payout %v key %q", c.PayoutAtRisk, c.Key)
	}
	if c := byEndpoint[auth]; c.PayoutAtRisk != 12.5 {
		t.Errorf("numeric-string payout: %v", c.PayoutAtRisk)
	}

	t.Run("replay a cluster", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/dead-letters/replay", map[string]any{"cluster": byEndpoint[auth].Key})
		mustStatus(t, rec, http.StatusOK)
		if n := decodeBody[struct{ Replayed int }](t, rec).Replayed; n != 5 {
			t.Fatalf("replayed %d, want 5", n)
		}
		var pending, budget int
		if err := env.pool.QueryRow(context.Background(), "SELECT count(*), min(max_attempts) FROM deliveries WHERE endpoint_id = $1 AND status = 'pending' AND dead_at IS NULL AND replay_count = 1 AND next_attempt_at <= now()", auth).Scan(&pending, &budget); err != nil {
			t.Fatal(err)
		}
		if pending != 5 || budget != 10 {
			t.Fatalf("after replay: %d pending, budget %d (want 5, 10)", pending, budget)
		}
		if n := countRows(t, env.pool, "audit_log WHERE action = 'dead_letters.replay'"); n != 1 {
			t.Fatalf("audit rows %d", n)
		}
		// Replaying again finds nothing dead.
		rec = env.do(http.MethodPost, "/api/v1/dead-letters/replay", map[string]any{"cluster": byEndpoint[auth].Key})
		if n := decodeBody[struct{ Replayed int }](t, rec).Replayed; n != 0 {
			t.Fatalf("second replay %d", n)
		}
	})
	t.Run("replay an endpoint since a time", func(t *testing.T) {
		since := now.Add(-2 * time.Hour)
		rec := env.do(http.MethodPost, "/api/v1/dead-letters/replay", map[string]any{"endpoint_id": outage, "since": since})
		if n := decodeBody[struct{ Replayed int }](t, rec).Replayed; n != 0 {
			t.Fatalf("replayed %d dead before since", n)
		}
		rec = env.do(http.MethodPost, "/api/v1/dead-letters/replay", map[string]any{"endpoint_id": outage})
		if n := decodeBody[struct{ Replayed int }](t, rec).Replayed; n != 41 {
			t.Fatalf("replayed %d, want all 41", n)
		}
	})
	t.Run("replay by ids", func(t *testing.T) {
		var id int64
		if err := env.pool.QueryRow(context.Background(), "SELECT id FROM deliveries WHERE endpoint_id = $1", gone).Scan(&id); err != nil {
			t.Fatal(err)
		}
		rec := env.do(http.MethodPost, "/api/v1/dead-letters/replay", map[string]any{"delivery_ids": []int64{id, 999999}})
		if n := decodeBody[struct{ Replayed int }](t, rec).Replayed; n != 1 {
			t.Fatalf("replayed %d", n)
		}
	})
	for name, body := range map[string]any{
		"nothing":     map[string]any{},
		"two forms":   map[string]any{"endpoint_id": outage, "cluster": byEndpoint[auth].Key},
		"bad cluster": map[string]any{"cluster": "nope"},
		"lone since":  map[string]any{"since": now},
		"bad hours":   map[string]any{"cluster": byEndpoint[auth].Key, "hours": -1},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			mustError(t, env.do(http.MethodPost, "/api/v1/dead-letters/replay", body), http.StatusUnprocessableEntity, "")
		})
	}
	mustError(t, env.do(http.MethodGet, "/api/v1/dead-letters/clusters?hours=0", nil), 422, "hours")
}

func TestAPIStatsAlerts(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	slow := env.createEndpoint(map[string]any{"partner_id": pid, "name": "slow", "kind": "webhook", "url": "https://slow.example/"}).ID
	crit := env.createEndpoint(map[string]any{"partner_id": pid, "name": "crit", "kind": "webhook", "url": "https://crit.example/"}).ID
	rec := env.do(http.MethodGet, "/api/v1/stats", nil)
	mustStatus(t, rec, http.StatusOK)
	if st := decodeBody[pipelineStats](t, rec); len(st.Alerts) != 0 || st.Pending != 0 {
		t.Fatalf("quiet pipeline: %+v", st)
	}
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := env.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// One old pending delivery, dead letters rising, one slow and one critical endpoint.
	env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "a.b", "payload": map[string]any{}})
	exec("UPDATE deliveries SET created_at = now() - interval '45 minutes'")
	env.seedDead(slow, "http_status", 500, "", times(time.Now().Add(-30*time.Minute), 3, time.Minute)...)
	env.seedDead(slow, "http_status", 500, "", time.Now().Add(-90*time.Minute))
	exec("UPDATE endpoint_health SET recent_p95_ms = 3100, recent_sample_count = 40, p95_ms = 400, sample_count = 5000 WHERE endpoint_id = $1", slow)
	exec("UPDATE endpoint_health SET recent_p95_ms = 6200, recent_sample_count = 25 WHERE endpoint_id = $1", crit)

	rec = env.do(http.MethodGet, "/api/v1/stats", nil)
	mustStatus(t, rec, http.StatusOK)
	st := decodeBody[pipelineStats](t, rec)
	if st.Pending != 2 || st.Dead != 4 || st.DeadLastHour != 3 || st.OldestPendingSeconds < 45*60-5 {
		t.Fatalf("summary %+v", st)
	}
	kinds := map[string]alert{}
	for _, a := range st.Alerts {
		kinds[a.Kind] = a
	}
	if a := kinds["dead_letters_rising"]; a.Severity != "warn" || len(a.Endpoints) != 1 || a.Endpoints[0].Dead != 3 {
		t.Errorf("dead letters alert %+v", a)
	}
	if a := kinds["oldest_pending"]; a.Severity != "critical" {
		t.Errorf("oldest pending alert %+v", a)
	}
	t.Run("deliveries held for a disabled endpoint are not late", func(t *testing.T) {
		exec("UPDATE endpoints SET enabled = false")
		defer exec("UPDATE endpoints SET enabled = true")
		rec := env.do(http.MethodGet, "/api/v1/stats", nil)
		st := decodeBody[pipelineStats](t, rec)
		if st.Pending != 2 || st.OldestPendingSeconds != 0 {
			t.Fatalf("with every endpoint disabled: pending %d, oldest %.0f s", st.Pending, st.OldestPendingSeconds)
		}
		for _, a := range st.Alerts {
			if a.Kind == "oldest_pending" {
				t.Fatalf("late-delivery alert for held deliveries: %+v", a)
			}
		}
	})
	a := kinds["slow_endpoints"]
	if a.Severity != "critical" || len(a.Endpoints) != 2 || a.Endpoints[0].ID != crit || a.Endpoints[0].Latency != "critical" || a.Endpoints[1].Latency != "slow" {
		t.Errorf("slow endpoints alert %+v", a)
	}
	// The endpoint API shows the same flag.
	rec = env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", slow), nil)
	if e := decodeBody[endpointJSON](t, rec); e.Health.Latency != "slow" || *e.Health.RecentP95Ms != 3100 {
		t.Errorf("endpoint health %+v", e.Health)
	}
}

// TestAPIStatsInFlight: claims write nothing, so a delivery being sent is
// still pending or awaiting retry in the table; the summary counts what
// the live workers say they hold (their heartbeats) as in flight instead,
// with probes leased in the table, and leaves a stale heartbeat out.
func TestAPIStatsInFlight(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	for range 4 {
		env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "a.b", "payload": map[string]any{}})
	}
	ctx := context.Background()
	if _, err := env.pool.Exec(ctx, `
		UPDATE deliveries SET status = 'failed' WHERE id = (SELECT min(id) FROM deliveries);
		UPDATE deliveries SET status = 'in_flight', lease_owner = 'a', lease_expires_at = now() + interval '1 minute'
		WHERE id = (SELECT max(id) FROM deliveries);
		INSERT INTO worker_heartbeats (worker_id, claim_protocol, in_flight, in_flight_retries, last_seen_at)
		VALUES ('a', 2, 2, 1, now()), ('gone', 2, 5, 0, now() - interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	rec := env.do(http.MethodGet, "/api/v1/stats", nil)
	mustStatus(t, rec, http.StatusOK)
	st := decodeBody[pipelineStats](t, rec)
	// Rows: 2 pending, 1 failed, 1 leased. Worker a holds 2, one a retry.
	if st.Pending != 1 || st.AwaitingRetry != 0 || st.InFlight != 3 {
		t.Fatalf("pending %d, awaiting retry %d, in flight %d; want 1, 0, 3", st.Pending, st.AwaitingRetry, st.InFlight)
	}
}

func TestAPIRotateSecret(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	path := fmt.Sprintf("/api/v1/endpoints/%d/secrets/rotate", ep.ID)
	rec := env.do(http.MethodPost, path, map[string]any{"overlap_seconds": 3600})
	mustStatus(t, rec, http.StatusOK)
	body := decodeBody[struct {
		Secret           string
		PreviousExpireAt time.Time `json:"previous_expire_at"`
	}](t, rec)
	if !strings.HasPrefix(body.Secret, "whsec_") || body.Secret == ep.Secret {
		t.Fatalf("rotate: %+v", body)
	}
	if d := time.Until(body.PreviousExpireAt); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("old secret expires in %s, want 1 h", d)
	}
	var active, expiring int
	if err := env.pool.QueryRow(context.Background(), "SELECT count(*) FILTER (WHERE expires_at IS NULL), count(*) FILTER (WHERE expires_at IS NOT NULL) FROM endpoint_secrets WHERE endpoint_id = $1", ep.ID).Scan(&active, &expiring); err != nil {
		t.Fatal(err)
	}
	if active != 1 || expiring != 1 {
		t.Fatalf("secrets: %d current, %d expiring", active, expiring)
	}
	// Default overlap is 24 h; a body is optional.
	rec = env.do(http.MethodPost, path, nil)
	mustStatus(t, rec, http.StatusOK)
	mustError(t, env.do(http.MethodPost, path, map[string]any{"overlap_seconds": -5}), 422, "overlap_seconds")
	mustError(t, env.do(http.MethodPost, "/api/v1/endpoints/987654/secrets/rotate", nil), 404, "")
	if n := countRows(t, env.pool, "audit_log WHERE action = 'endpoint.rotate_secret'"); n != 2 {
		t.Fatalf("audit rows %d", n)
	}
	var details string
	if err := env.pool.QueryRow(context.Background(), "SELECT details::text FROM audit_log WHERE action = 'endpoint.rotate_secret' LIMIT 1").Scan(&details); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(details, "whsec_") {
		t.Fatal("secret in the audit log")
	}
}

func TestAPIBreakerActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	base := fmt.Sprintf("/api/v1/endpoints/%d/", ep.ID)
	mustError(t, env.do(http.MethodPost, base+"resume", nil), http.StatusConflict, "")
	rec := env.do(http.MethodPost, base+"pause", nil)
	mustStatus(t, rec, http.StatusOK)
	if h := decodeBody[healthJSON](t, rec); h.State != "open" || !h.Paused || h.NextProbeAt != nil {
		t.Fatalf("paused: %+v", h)
	}
	rec = env.do(http.MethodPost, base+"resume", nil)
	if h := decodeBody[healthJSON](t, rec); h.State != "closed" || h.Paused {
		t.Fatalf("resumed: %+v", h)
	}
	env.exec("UPDATE endpoint_health SET state = 'open', opened_at = now(), consecutive_failures = 12, cooldown_seconds = 1200 WHERE endpoint_id = $1", ep.ID)
	rec = env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), nil)
	mustStatus(t, rec, http.StatusOK)
	open := decodeBody[endpointJSON](t, rec).Health
	if open.NextProbeAt == nil || open.OpenedAt == nil || !open.NextProbeAt.Equal(open.OpenedAt.Add(1200*time.Second)) {
		t.Fatalf("open with a 1200 s cooldown: next_probe_at %v, opened_at %v", open.NextProbeAt, open.OpenedAt)
	}
	rec = env.do(http.MethodPost, base+"force-close", nil)
	if h := decodeBody[healthJSON](t, rec); h.State != "closed" || h.ConsecutiveFailures != 0 || h.CooldownSeconds != 300 {
		t.Fatalf("force closed: %+v", h)
	}
	if n := countRows(t, env.pool, "audit_log WHERE action IN ('endpoint.pause', 'endpoint.resume', 'endpoint.force_close')"); n != 3 {
		t.Fatalf("audit rows %d", n)
	}
	mustError(t, env.do(http.MethodPost, "/api/v1/endpoints/987654/pause", nil), 404, "")
}

func TestMetricsParse(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "a.b", "payload": map[string]any{}})
	rec := env.do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+testMetricsToken)
	mustStatus(t, rec, http.StatusOK)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, rec.Body.String())
	}
	q := families["hookline_queue_deliveries"]
	if q == nil {
		t.Fatal("no queue gauge")
	}
	for _, m := range q.Metric {
		if m.Label[0].GetValue() == "pending" && m.Gauge.GetValue() != 1 {
			t.Fatalf("pending = %v", m.Gauge.GetValue())
		}
	}
	if b := families["hookline_endpoint_breaker_state"]; b == nil || len(b.Metric) != 1 {
		t.Fatal("no breaker state per endpoint")
	}
	if up := families["hookline_database_up"]; up == nil || up.Metric[0].Gauge.GetValue() != 1 {
		t.Fatal("database_up missing")
	}
	// The NOTIFY queue's fill, for an alert before wake-ups stop.
	if n := families["hookline_notify_queue_usage"]; n == nil || len(n.Metric) != 1 || n.Metric[0].Gauge.GetValue() >= db.NotifyQueueLimit {
		t.Fatalf("notify queue usage: %v", n)
	}
	// Nothing delivered yet: retention has nothing to be behind on.
	if r := families["hookline_retention_oldest_delivered_seconds"]; r == nil || len(r.Metric) != 1 || r.Metric[0].Gauge.GetValue() != 0 {
		t.Fatalf("oldest delivered: %v", r)
	}
	// A delivery delivered an hour ago reads as an hour old.
	if _, err := env.pool.Exec(context.Background(),
		"UPDATE deliveries SET status = 'delivered', attempt_count = 1, delivered_at = now() - interval '1 hour'"); err != nil {
		t.Fatal(err)
	}
	rec = env.do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+testMetricsToken)
	families, err = parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r := families["hookline_retention_oldest_delivered_seconds"]; r == nil || len(r.Metric) != 1 ||
		r.Metric[0].Gauge.GetValue() < 3600 || r.Metric[0].Gauge.GetValue() > 3700 {
		t.Fatalf("oldest delivered after an hour: %v", r)
	}
}

// TestAPIStatsLargeBacklog: a status with more deliveries than
// queueCountCap is counted to the cap and then read from the planner's
// estimate, named in counts_estimated, shown with "≈" on the overview and
// given to the metrics; the other counts stay exact.
func TestAPIStatsLargeBacklog(t *testing.T) {
	env := newEnv(t)
	was := queueCountCap
	queueCountCap = 10
	t.Cleanup(func() { queueCountCap = was })
	ep := env.createEndpoint(map[string]any{"partner_id": env.createPartner("Acme"), "name": "a", "kind": "webhook", "url": "https://hooks.acme.invalid/in"}).ID
	env.exec(`INSERT INTO events (id, type, payload) SELECT gen_random_uuid(), 'a.b', '{}' FROM generate_series(1, 43)`)
	env.exec(`INSERT INTO deliveries (event_id, endpoint_id, max_attempts) SELECT id, $1, 5 FROM events`, ep)
	env.exec(`UPDATE deliveries SET status = 'failed', attempt_count = 1 WHERE id IN (SELECT id FROM deliveries ORDER BY id LIMIT 3)`)

	// Before the queue's first ANALYZE there is no estimate: the cap.
	st := decodeBody[pipelineStats](t, env.do(http.MethodGet, "/api/v1/stats", nil))
	if st.Pending != 10 || st.AwaitingRetry != 3 || !slices.Equal(st.CountsEstimated, []string{"pending"}) {
		t.Fatalf("without statistics: pending %d, awaiting retry %d, estimated %v; want 10, 3, [pending]", st.Pending, st.AwaitingRetry, st.CountsEstimated)
	}
	env.exec("ANALYZE deliveries_queue")
	st = decodeBody[pipelineStats](t, env.do(http.MethodGet, "/api/v1/stats", nil))
	if st.Pending != 40 || st.AwaitingRetry != 3 || !slices.Equal(st.CountsEstimated, []string{"pending"}) {
		t.Fatalf("analyzed: pending %d, awaiting retry %d, estimated %v; want 40, 3, [pending]", st.Pending, st.AwaitingRetry, st.CountsEstimated)
	}

	rec := env.do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+testMetricsToken)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range families["hookline_queue_deliveries"].GetMetric() {
		got[m.Label[0].GetValue()] = m.Gauge.GetValue()
	}
	if got["pending"] != 40 || got["failed"] != 3 {
		t.Fatalf("queue gauge %v, want pending 40 and failed 3", got)
	}

	b := env.signIn(env.server(), "v@example.com", "viewer")
	_, doc := b.get("/overview/live")
	tile := doc.Find(`#tile-pending`)
	if !strings.Contains(tile.Text(), "≈ 40") || strings.Contains(doc.Find(`#tile-retry`).Text(), "≈") {
		t.Fatalf("overview tiles: pending %q, awaiting retry %q; want only the first estimated", tile.Text(), doc.Find(`#tile-retry`).Text())
	}
}
