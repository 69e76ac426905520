package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/worker/monitoring"
	"github.com/hookline/hookline/worker/sender"
)

// Metrics are the worker's Prometheus collectors: what this replica did.
// Queue depth and breaker states are read from the database at scrape time
// by the web server. A nil *Metrics records nothing.
type Metrics struct {
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	dead          *prometheus.CounterVec
	claimDuration prometheus.Histogram
	claimed       prometheus.Counter
	flushDuration prometheus.Histogram
	flushErrors   prometheus.Counter
	retainPasses  *prometheus.CounterVec
	retainDeleted *prometheus.CounterVec
	shards        prometheus.Gauge
	reach         *prometheus.CounterVec // reachability.go
}

// NewMetrics creates the collectors and registers them with reg. The
// series whose label values are known in advance start at zero, so a rate
// over them (and an alert on it) has a value before the first event.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(monitoring.DeliveryAttempts.CounterOpts(), monitoring.DeliveryAttempts.Labels),
		duration: prometheus.NewHistogramVec(monitoring.DeliveryAttemptDuration.HistogramOpts(
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 15, 30, 60}), monitoring.DeliveryAttemptDuration.Labels),
		dead:          prometheus.NewCounterVec(monitoring.DeliveriesDead.CounterOpts(), monitoring.DeliveriesDead.Labels),
		claimDuration: prometheus.NewHistogram(monitoring.ClaimDuration.HistogramOpts(prometheus.ExponentialBuckets(0.0005, 2, 14))),
		claimed:       prometheus.NewCounter(monitoring.DeliveriesClaimed.CounterOpts()),
		flushDuration: prometheus.NewHistogram(monitoring.FlushDuration.HistogramOpts(prometheus.ExponentialBuckets(0.0005, 2, 14))),
		flushErrors:   prometheus.NewCounter(monitoring.FlushErrors.CounterOpts()),
		retainPasses:  prometheus.NewCounterVec(monitoring.RetentionPasses.CounterOpts(), monitoring.RetentionPasses.Labels),
		retainDeleted: prometheus.NewCounterVec(monitoring.RetentionDeletedRows.CounterOpts(), monitoring.RetentionDeletedRows.Labels),
		shards:        prometheus.NewGauge(monitoring.WorkerShardsOwned.GaugeOpts()),
		reach:         newReachCounter(),
	}
	reg.MustRegister(m.attempts, m.duration, m.dead, m.claimDuration, m.claimed, m.flushDuration, m.flushErrors, m.retainPasses, m.retainDeleted, m.shards, m.reach)
	m.attempts.WithLabelValues(string(sender.OK), "none")
	for _, o := range []sender.Outcome{sender.OK, sender.Transient, sender.Permanent, sender.Gone} {
		m.duration.WithLabelValues(string(o))
		if o != sender.OK {
			m.dead.WithLabelValues(string(o))
		}
	}
	for _, r := range []string{"caught_up", "behind", "skipped", "failed"} {
		m.retainPasses.WithLabelValues(r)
	}
	for _, t := range []string{"events", "delivery_attempts", "latency_histograms"} {
		m.retainDeleted.WithLabelValues(t)
	}
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

// observeOutcome counts one recorded attempt, and the delivery when it
// went dead (flush passes no canceled send: those record nothing).
func (m *Metrics) observeOutcome(o *outcome) {
	if m == nil {
		return
	}
	class := o.res.ErrorClass
	if class == "" {
		class = "none"
	}
	m.attempts.WithLabelValues(string(o.res.Outcome), class).Inc()
	if o.dead {
		m.dead.WithLabelValues(string(o.res.Outcome)).Inc()
	}
	if o.sent() {
		m.duration.WithLabelValues(string(o.res.Outcome)).Observe(o.res.Duration.Seconds())
	}
}
