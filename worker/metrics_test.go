package worker

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDeadLettersAreCounted: a delivery that goes dead counts once in
// hookline_deliveries_dead_total, by the outcome of its last attempt; a
// failed attempt that is retried and a delivered delivery count nothing.
func TestDeadLettersAreCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := newReceiver(t)
	bad.setHandler(respond(http.StatusBadRequest))
	gone := newReceiver(t)
	gone.setHandler(respond(http.StatusGone))
	flaky := newReceiver(t)
	flaky.setHandler(respond(http.StatusServiceUnavailable))
	ok := newReceiver(t)
	e.endpoint(endpointOpts{url: bad.URL})
	e.endpoint(endpointOpts{url: gone.URL})
	e.endpoint(endpointOpts{url: flaky.URL, maxAttempts: 1})
	e.endpoint(endpointOpts{url: ok.URL})
	metrics := NewMetrics(prometheus.NewRegistry())
	for _, o := range []string{"transient", "permanent", "gone"} {
		if v := counterValue(t, metrics.dead.WithLabelValues(o)); v != 0 {
			t.Fatalf("dead %s starts at %v", o, v)
		}
	}
	e.events(1, "order.created", `{}`)
	e.run(e.worker(func(c *Config) { c.Metrics = metrics }))
	e.waitFor("three dead, one delivered", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 3 &&
			e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1
	})
	e.waitFor("three dead counted", func() bool {
		sum := 0.0
		for _, o := range []string{"transient", "permanent", "gone"} {
			sum += counterValue(t, metrics.dead.WithLabelValues(o))
		}
		return sum == 3
	})
	for o, want := range map[string]float64{"transient": 1, "permanent": 1, "gone": 1} {
		if got := counterValue(t, metrics.dead.WithLabelValues(o)); got != want {
			t.Errorf("dead %s = %v, want %v", o, got, want)
		}
	}
}
