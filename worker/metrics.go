package worker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/worker/sender"
)

// Metrics are the worker's Prometheus collectors. A nil *Metrics records
// nothing, so tests and benchmarks need not register anything.
type Metrics struct {
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	claimDuration prometheus.Histogram
	claimed       prometheus.Counter
	flushDuration prometheus.Histogram
	flushErrors   prometheus.Counter
	queue         *prometheus.GaugeVec
	oldest        prometheus.Gauge
	breakers      *prometheus.GaugeVec
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
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookline_queue_deliveries",
			Help: "Deliveries by status (pending, failed = awaiting retry, in_flight, dead).",
		}, []string{"status"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookline_queue_oldest_pending_seconds",
			Help: "Age of the oldest delivery waiting to be sent (0 when none).",
		}),
		breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookline_endpoint_breakers",
			Help: "Endpoints by circuit breaker state (closed, open, half_open, paused).",
		}, []string{"state"}),
	}
	reg.MustRegister(m.attempts, m.duration, m.claimDuration, m.claimed, m.flushDuration,
		m.flushErrors, m.queue, m.oldest, m.breakers)
	return m
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

func (m *Metrics) observeOutcomes(batch []outcome) {
	if m == nil {
		return
	}
	for i := range batch {
		o := &batch[i]
		if o.res.ErrorClass == sender.ClassCanceled {
			continue
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
}

// observeQueue refreshes the queue and breaker gauges from the database.
func (w *Worker) observeQueue(ctx context.Context) error {
	m := w.metrics
	if m == nil {
		return nil
	}
	s, err := w.q.PipelineStats(ctx, w.dbNow())
	if err != nil {
		return err
	}
	m.queue.WithLabelValues("pending").Set(float64(s.Pending))
	m.queue.WithLabelValues("failed").Set(float64(s.AwaitingRetry))
	m.queue.WithLabelValues("in_flight").Set(float64(s.InFlight))
	m.queue.WithLabelValues("dead").Set(float64(s.Dead))
	m.oldest.Set(max(s.OldestPendingSeconds, 0))
	states, err := w.q.StatsBreakerStates(ctx)
	if err != nil {
		return err
	}
	counts := map[string]float64{"closed": 0, "open": 0, "half_open": 0, "paused": 0}
	for _, r := range states {
		st := r.State
		if r.Paused {
			st = "paused"
		}
		counts[st] += float64(r.Endpoints)
	}
	for st, n := range counts {
		m.breakers.WithLabelValues(st).Set(n)
	}
	return nil
}
