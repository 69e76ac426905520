package web

import (
	"bytes"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the public /metrics with the metrics token.
func scrape(t *testing.T, env *testEnv) map[string]*dto.MetricFamily {
	t.Helper()
	rec := env.do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+testMetricsToken)
	mustStatus(t, rec, http.StatusOK)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return families
}

// gaugeOf is the value of the family's series whose labels include want;
// ok is false when there is none.
func gaugeOf(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		match := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsForAlerts: the gauges the generated alert rules read. Dead
// letters of the last and the previous hour (the rising alert), live
// workers (liveness), the samples behind each P95 (a slow alert needs 20)
// and how much of its failure budget an endpoint has used.
func TestMetricsForAlerts(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://hooks.acme.invalid/in"}).ID
	off := env.createEndpoint(map[string]any{"partner_id": pid, "name": "off", "kind": "webhook", "url": "https://hooks.acme.invalid/off", "disable_after_failures": 0}).ID
	env.exec(`INSERT INTO events (id, type, payload) SELECT gen_random_uuid(), 'a.b', '{}' FROM generate_series(1, 5)`)
	env.exec(`INSERT INTO deliveries (event_id, endpoint_id, max_attempts) SELECT id, $1, 5 FROM events`, ep)
	env.exec(`UPDATE deliveries SET status = 'dead', attempt_count = 5, dead_at = now() - interval '10 minutes' WHERE id IN (SELECT id FROM deliveries ORDER BY id LIMIT 3)`)
	env.exec(`UPDATE deliveries SET status = 'dead', attempt_count = 5, dead_at = now() - interval '90 minutes' WHERE status = 'pending' AND id IN (SELECT id FROM deliveries ORDER BY id LIMIT 4)`)
	env.exec(`UPDATE endpoint_health SET p95_ms = 2500, sample_count = 40, recent_p95_ms = 6000, recent_sample_count = 25, failed_deliveries = 7 WHERE endpoint_id = $1`, ep)
	env.exec(`UPDATE endpoint_health SET failed_deliveries = 7 WHERE endpoint_id = $1`, off)
	env.exec(`INSERT INTO worker_heartbeats (worker_id, last_seen_at) VALUES ('live', now()), ('stale', now() - interval '1 minute')`)

	f := scrape(t, env)
	id := map[string]string{"endpoint_id": itoa64(ep)}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"endpoint_id": itoa64(ep)}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hookline_deliveries_dead_last_hour", nil, 3},
		{"hookline_deliveries_dead_previous_hour", nil, 1},
		{"hookline_workers_live", nil, 1},
		{"hookline_endpoint_latency_p95_seconds", with("window", "24h"), 2.5},
		{"hookline_endpoint_latency_p95_seconds", with("window", "10m"), 6},
		{"hookline_endpoint_latency_samples", with("window", "24h"), 40},
		{"hookline_endpoint_latency_samples", with("window", "10m"), 25},
		{"hookline_endpoint_failure_budget_used_ratio", id, 0.7}, // 7 of the default 10
		{"hookline_database_up", nil, 1},
	} {
		got, ok := gaugeOf(f, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// Auto-disable off: no budget to be near.
	if _, ok := gaugeOf(f, "hookline_endpoint_failure_budget_used_ratio", map[string]string{"endpoint_id": itoa64(off)}); ok {
		t.Error("an endpoint with auto-disable off reports a failure budget")
	}
	// Disabled: its budget is beside the point.
	env.exec(`UPDATE endpoints SET enabled = false WHERE id = $1`, ep)
	if _, ok := gaugeOf(scrape(t, env), "hookline_endpoint_failure_budget_used_ratio", id); ok {
		t.Error("a disabled endpoint reports a failure budget")
	}
}
