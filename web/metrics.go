package web

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/monitoring"
)

// queueCollector reports the queue, the workers' heartbeats and every
// endpoint's breaker, latency and failure budget at scrape time, from the
// database, so any replica (web or worker) gives the same picture. Counters
// of attempts and durations come from the worker replicas themselves
// (worker.Metrics). The metrics are defined in worker/monitoring, which the
// generated alert rules and dashboard read too.
type queueCollector struct {
	s                                   *Server
	queue, oldest, deadLast, deadPrev   *prometheus.Desc
	breaker, p95, samples, budget, live *prometheus.Desc
	scrapeOK, notifyQ, retained         *prometheus.Desc
}

func newQueueCollector(s *Server) *queueCollector {
	return &queueCollector{
		s:        s,
		queue:    monitoring.QueueDeliveries.Desc(),
		oldest:   monitoring.QueueOldestPending.Desc(),
		deadLast: monitoring.DeadLastHour.Desc(),
		deadPrev: monitoring.DeadPreviousHour.Desc(),
		breaker:  monitoring.EndpointBreakerState.Desc(),
		p95:      monitoring.EndpointLatencyP95.Desc(),
		samples:  monitoring.EndpointLatencySamples.Desc(),
		budget:   monitoring.EndpointFailureBudget.Desc(),
		live:     monitoring.WorkersLive.Desc(),
		scrapeOK: monitoring.DatabaseUp.Desc(),
		notifyQ:  monitoring.NotifyQueueUsage.Desc(),
		retained: monitoring.RetentionOldestDelivered.Desc(),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queue, c.oldest, c.deadLast, c.deadPrev, c.breaker, c.p95, c.samples, c.budget, c.live, c.scrapeOK, c.notifyQ, c.retained} {
		ch <- d
	}
}

// Collect reports hookline_database_up 0 and stops at the first query that
// fails: a partial picture would read as an empty queue.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 1)
}

func (c *queueCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st, _, err := c.s.pipelineRow(ctx)
	if err != nil {
		return err
	}
	q := queueOf(st)
	gauge(c.queue, float64(q.pending), "pending")
	gauge(c.queue, float64(q.awaitingRetry), "failed")
	gauge(c.queue, float64(q.inFlight), "in_flight")
	gauge(c.queue, float64(st.Dead), "dead")
	gauge(c.oldest, max(st.OldestPendingSeconds, 0))
	gauge(c.deadLast, float64(st.DeadLastHour))
	gauge(c.deadPrev, float64(st.DeadPreviousHour))
	live, err := c.s.q.WorkerHeartbeatsLive(ctx, db.WorkerHeartbeatsLiveParams{LiveForSeconds: monitoring.WorkerLiveFor.Seconds()})
	if err != nil {
		return err
	}
	gauge(c.live, float64(live))
	usage, err := c.s.q.NotifyQueueUsage(ctx)
	if err != nil {
		return err
	}
	gauge(c.notifyQ, usage)
	retained, err := c.s.q.RetentionOldestDelivered(ctx, nil)
	if err != nil {
		return err
	}
	gauge(c.retained, max(retained, 0))
	rows, err := c.s.q.EndpointBreakerStates(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		id := strconv.FormatInt(r.ID, 10)
		state := r.State
		switch {
		case !r.Enabled:
			state = "disabled"
		case r.Paused:
			state = "paused"
		}
		gauge(c.breaker, 1, id, r.Name, state)
		if r.P95Ms != nil {
			gauge(c.p95, *r.P95Ms/1000, id, r.Name, "24h")
		}
		if r.RecentP95Ms != nil {
			gauge(c.p95, *r.RecentP95Ms/1000, id, r.Name, "10m")
		}
		gauge(c.samples, float64(r.SampleCount), id, r.Name, "24h")
		gauge(c.samples, float64(r.RecentSampleCount), id, r.Name, "10m")
		// A disabled endpoint's budget is spent or beside the point; one
		// with auto-disable off has none.
		if r.Enabled && r.DisableAfterFailures > 0 {
			gauge(c.budget, min(float64(r.FailedDeliveries)/float64(r.DisableAfterFailures), 1), id, r.Name)
		}
	}
	return nil
}
