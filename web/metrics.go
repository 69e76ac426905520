package web

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db"
)

// queueCollector reports the queue and every endpoint's breaker and latency
// at scrape time, from the database, so any replica (web or worker) gives
// the same picture. Counters of attempts and durations come from the worker
// replicas themselves (worker.Metrics).
type queueCollector struct {
	s        *Server
	queue    *prometheus.Desc
	oldest   *prometheus.Desc
	breaker  *prometheus.Desc
	p95      *prometheus.Desc
	scrapeOK *prometheus.Desc
	notifyQ  *prometheus.Desc
	retained *prometheus.Desc
}

func newQueueCollector(s *Server) *queueCollector {
	return &queueCollector{
		s: s,
		queue: prometheus.NewDesc("hookline_queue_deliveries",
			fmt.Sprintf("Deliveries by status (pending, failed = awaiting retry, in_flight, dead); past %d a status is PostgreSQL's estimate, from its last ANALYZE of the queue.", queueCountCap), []string{"status"}, nil),
		oldest: prometheus.NewDesc("hookline_queue_oldest_pending_seconds",
			"Age of the oldest delivery waiting to be sent (0 when none).", nil, nil),
		breaker: prometheus.NewDesc("hookline_endpoint_breaker_state",
			"1 for the endpoint's current breaker state (closed, open, half_open, paused, disabled).",
			[]string{"endpoint_id", "endpoint", "state"}, nil),
		p95: prometheus.NewDesc("hookline_endpoint_latency_p95_seconds",
			"Endpoint P95 attempt latency over the window (24h or 10m), from merged histograms.",
			[]string{"endpoint_id", "endpoint", "window"}, nil),
		scrapeOK: prometheus.NewDesc("hookline_database_up",
			"1 when the database answered the metrics queries.", nil, nil),
		notifyQ: prometheus.NewDesc("hookline_notify_queue_usage",
			fmt.Sprintf("How full PostgreSQL's NOTIFY queue is (0 to 1, the whole cluster). From %g hookline stops sending wake-up NOTIFYs and workers find deliveries by polling; it fills only while a listening session does not read.", db.NotifyQueueLimit), nil, nil),
		retained: prometheus.NewDesc("hookline_retention_oldest_delivered_seconds",
			"Age of the oldest delivered delivery still kept (0 when none): about HOOKLINE_RETAIN_DELIVERED while retention keeps up, more when it falls behind.", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queue, c.oldest, c.breaker, c.p95, c.scrapeOK, c.notifyQ, c.retained} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, _, err := c.s.pipelineRow(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	q := queueOf(st)
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(q.pending), "pending")
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(q.awaitingRetry), "failed")
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(q.inFlight), "in_flight")
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(st.Dead), "dead")
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, max(st.OldestPendingSeconds, 0))
	usage, err := c.s.q.NotifyQueueUsage(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.notifyQ, prometheus.GaugeValue, usage)
	retained, err := c.s.q.RetentionOldestDelivered(ctx, nil)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.retained, prometheus.GaugeValue, max(retained, 0))
	rows, err := c.s.q.EndpointBreakerStates(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0)
		return
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
		ch <- prometheus.MustNewConstMetric(c.breaker, prometheus.GaugeValue, 1, id, r.Name, state)
		if r.P95Ms != nil {
			ch <- prometheus.MustNewConstMetric(c.p95, prometheus.GaugeValue, *r.P95Ms/1000, id, r.Name, "24h")
		}
		if r.RecentP95Ms != nil {
			ch <- prometheus.MustNewConstMetric(c.p95, prometheus.GaugeValue, *r.RecentP95Ms/1000, id, r.Name, "10m")
		}
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 1)
}
