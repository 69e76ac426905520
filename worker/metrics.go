package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the worker's Prometheus collectors: what this replica did.
// Queue depth and breaker states are read from the database at scrape time
// by the web server. A nil *Metrics records nothing.
type Metrics struct {
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	claimDuration prometheus.Histogram
	claimed       prometheus.Counter
	flushDuration prometheus.Histogram
	flushErrors   prometheus.Counter
	retainPasses  *prometheus.CounterVec
	retainDeleted *prometheus.CounterVec
	shards        prometheus.Gauge
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookline_delivery_attempts_total",
			Help: "Delivery attempts by outcome (ok, transient, permanent, gone) and error class.",
		}, []string{"outcome", "error_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookline_delivery_attempt_duration_seconds",
			Help:    "Duration of delivery attempts that reached the network, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 15, 30, 60},
		}, []string{"outcome"}),
		claimDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookline_claim_duration_seconds",
			Help:    "Duration of one claim statement.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookline_deliveries_claimed_total",
			Help: "Deliveries claimed by this replica.",
		}),
		flushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookline_complete_flush_duration_seconds",
			Help:    "Duration of one completion transaction (a batch of results).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookline_complete_flush_errors_total",
			Help: "Completion transactions that failed and were retried.",
		}),
		retainPasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookline_retention_passes_total",
			Help: "Retention passes by result: caught_up (everything past its retention deleted), behind (stopped at its budget with rows left; the next pass follows soon), skipped (another replica was running one) or failed.",
		}, []string{"result"}),
		retainDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookline_retention_deleted_rows_total",
			Help: "Rows retention deleted, by table (attempt partitions dropped whole are not counted).",
		}, []string{"table"}),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookline_worker_shards_owned",
			Help: "Shards of endpoints this replica owns and claims from (of 256; the live replicas divide them).",
		}),
	}
	reg.MustRegister(m.attempts, m.duration, m.claimDuration, m.claimed, m.flushDuration, m.flushErrors, m.retainPasses, m.retainDeleted, m.shards)
	return m
}

func (m *Metrics) observeRetention(res retainResult, err error) {
	if m == nil {
		return
	}
	switch {
	case err != nil:
		m.retainPasses.WithLabelValues("failed").Inc()
	case res == retainSkipped:
		m.retainPasses.WithLabelValues("skipped").Inc()
	case res == retainBehind:
		m.retainPasses.WithLabelValues("behind").Inc()
	default:
		m.retainPasses.WithLabelValues("caught_up").Inc()
	}
}

func (m *Metrics) observeRetained(table string, rows int64) {
	if m == nil || rows == 0 {
		return
	}
	m.retainDeleted.WithLabelValues(table).Add(float64(rows))
}

func (m *Metrics) observeShards(n int) {
	if m == nil {
		return
	}
	m.shards.Set(float64(n))
}

func (m *Metrics) observeClaim(d time.Duration, n int, err error) {
	if m == nil || err != nil {
		return
	}
	m.claimDuration.Observe(d.Seconds())
	m.claimed.Add(float64(n))
}

func (m *Metrics) observeFlush(d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.flushErrors.Inc()
		return
	}
	m.flushDuration.Observe(d.Seconds())
}

// observeOutcome counts one recorded attempt (flush passes no canceled
// send: those record nothing).
func (m *Metrics) observeOutcome(o *outcome) {
	if m == nil {
		return
	}
	class := o.res.ErrorClass
	if class == "" {
		class = "none"
	}
	m.attempts.WithLabelValues(string(o.res.Outcome), class).Inc()
	if o.sent() {
		m.duration.WithLabelValues(string(o.res.Outcome)).Observe(o.res.Duration.Seconds())
	}
}
