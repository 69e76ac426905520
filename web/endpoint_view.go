package web

// An endpoint's health, chart, secrets and table row as the dashboard and
// the portal show them.

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpoints"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/latency"
)

func (s *Server) healthPanel(ctx context.Context, r db.EndpointGetWithHealthRow, canOperate bool) (endpoint.Health, error) {
	e, h := r.Endpoint, r.EndpointHealth
	depth, err := s.q.EndpointQueueDepth(ctx, e.ID)
	if err != nil {
		return endpoint.Health{}, err
	}
	now := s.now()
	// Attempt rows are kept 7 days: the newest unsent failure within them.
	unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour), &e.ID)
	if err != nil {
		return endpoint.Health{}, err
	}
	u := unsent[e.ID]
	v := endpoint.Health{
		EndpointID: e.ID, Breaker: breakerData(e, h, now), P50: h.P50Ms, P95: h.P95Ms, P99: h.P99Ms,
		RecentP95: h.RecentP95Ms, Samples: h.SampleCount + u.Dead, Failures: h.ConsecutiveFailures,
		Cooldown: time.Duration(h.CooldownSeconds) * time.Second, PausedUntil: h.PausedUntil,
		Queue: depth.Queued, Dead: depth.Dead, Now: now, CanOperate: canOperate,
	}
	if canOperate && !e.Enabled {
		v.Breaker.Budget.EnableURL, v.Breaker.Budget.EnableTarget = fmt.Sprintf("/endpoints/%d/enable", e.ID), components.Target(endpoint.HealthID)
	}
	v.Threshold = int32(breaker.DefaultPolicy().ThresholdNow(int(e.FailureThreshold),
		latency.FromMs(deref(h.RecentP95Ms)), int(h.RecentSampleCount), latency.FromMs(deref(h.P95Ms)), int(h.SampleCount)))
	v.Latency = latencyFlag(h)
	v.SuccessRate = successRate(h, u.Dead)
	if h.LastSuccessAt != nil {
		v.LastSuccess = *h.LastSuccessAt
	}
	if h.LastFailureAt != nil {
		v.LastFailure = *h.LastFailureAt
	}
	if u.Last.After(v.LastFailure) {
		v.LastFailure = u.Last
	}
	return v, nil
}

// endpointChart is the 24 h sparkline series (latency.SparkSlots slots of
// latency.SparkStep) read from the stored histograms, uncached.
func (s *Server) endpointChart(ctx context.Context, e db.Endpoint) (components.ChartData, error) {
	const step, slots = latency.SparkStep, latency.SparkSlots
	now := s.now()
	start := latency.SparkStart(now)
	rows, err := s.q.LatencyRange(ctx, db.LatencyRangeParams{EndpointID: e.ID, ResolutionSeconds: int32(step / time.Second), Since: start, Until: now.Add(step)})
	if err != nil {
		return components.ChartData{}, err
	}
	c := components.ChartData{Label: e.Name, Start: start, Step: step, Now: now, Points: make([]components.SparkPoint, slots)}
	for _, r := range rows {
		i := int(r.BucketStart.Sub(start) / step)
		if i < 0 || i >= slots || r.Count == 0 {
			continue
		}
		c.Points[i] = components.SparkPoint{P50: deref(r.P50Ms), P95: deref(r.P95Ms), P99: deref(r.P99Ms), Count: int(r.Count)}
	}
	return c, nil
}

func (s *Server) secretsPanel(ctx context.Context, id int64, canOperate bool) (endpoint.Secrets, error) {
	rows, err := s.q.EndpointSecretList(ctx, id)
	if err != nil {
		return endpoint.Secrets{}, err
	}
	p := endpoint.Secrets{EndpointID: id, Now: s.now(), CanOperate: canOperate}
	for _, r := range rows {
		p.List = append(p.List, endpoint.Secret{ID: r.ID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	return p, nil
}

// endpointRow maps one endpoint with its health to the table's row; unsent
// is its dead deliveries of the last 24 h that were never sent, failures
// the cached health (from the latency histograms) does not count.
// endpointRow is an endpoint's table row without its sparklines (see
// withSparklinesOf): what search, filters and sorting need.
func endpointRow(r db.EndpointListWithHealthRow, queue, dead, unsent int64, now time.Time) endpoints.Row {
	e, h := r.Endpoint, r.EndpointHealth
	row := endpoints.Row{
		ID: e.ID, Name: e.Name, Partner: r.PartnerName, PartnerID: e.PartnerID, Kind: e.Kind,
		Host: endpointHost(e), Breaker: breakerData(e, h, now),
		P50: h.P50Ms, P95: h.P95Ms, P99: h.P99Ms, RecentP95: h.RecentP95Ms, Samples: h.SampleCount, Failures: h.ConsecutiveFailures,
		Queue: queue, Dead: dead,
	}
	row.Latency = latencyFlag(h)
	// A row flagged by its last 10 minutes shows that figure: the 24 h
	// ones beside it may all look fine.
	if recent := latency.FlagFor(latency.FromMs(deref(h.RecentP95Ms)), h.RecentSampleCount, latency.MinSamples); recent != latency.FlagOK && string(recent) == row.Latency {
		row.FlaggedByRecent = true
	}
	row.SuccessRate = successRate(h, unsent)
	return row
}

// withSparklines adds the row's sparklines from the cached series.
func withSparklines(row *endpoints.Row, sp db.EndpointSparkline) {
	row.Spark50, row.Spark95, row.Spark99 = sparkSeries(sp)
	row.MaxMs = max(peak(row.Spark99), peak(row.Spark95), peak(row.Spark50))
}

// withSparklinesOf adds their sparklines to rows, read in one query.
func (s *Server) withSparklinesOf(ctx context.Context, rows []endpoints.Row) error {
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	series, err := s.q.EndpointSparklines(ctx, ids)
	if err != nil {
		return fmt.Errorf("load sparklines: %w", err)
	}
	byID := make(map[int64]db.EndpointSparkline, len(series))
	for _, sp := range series {
		byID[sp.EndpointID] = sp
	}
	for i := range rows {
		withSparklines(&rows[i], byID[rows[i].ID])
	}
	return nil
}

// endpointHost is what the dashboard may show of an endpoint's URL: the
// host, never a path or query (postback queries carry click ids and payouts
// once filled, and templates may carry partner keys).
func endpointHost(e db.Endpoint) string {
	if e.Kind == "postback" {
		return postbackHostPort(e.URL)
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// latencyFlag is an endpoint's latency badge: "" without attempts, "ok"
// with too few to judge, else the worse of its recent and 24 h flags.
func latencyFlag(h db.EndpointHealth) string {
	if h.SampleCount == 0 && h.RecentSampleCount == 0 {
		return ""
	}
	return string(worstFlag(h.RecentP95Ms, h.RecentSampleCount, h.P95Ms, h.SampleCount))
}

// sparkSeries folds the cached series (latency.SparkSlots slots) into half as
// many points, each the worse of its two slots, for the table's small
// sparklines (120 px wide: a point every 2.5 px; a thousand rows stay
// light), with gaps (-1) where no attempt was made.
func sparkSeries(h db.EndpointSparkline) (p50, p95, p99 []float64) {
	n := len(h.Counts)
	if n == 0 || n%2 != 0 || len(h.P50) != n || len(h.P95) != n || len(h.P99) != n {
		return nil, nil, nil
	}
	m := n / 2
	p50, p95, p99 = make([]float64, m), make([]float64, m), make([]float64, m)
	for i := range m {
		p50[i], p95[i], p99[i] = -1, -1, -1
		for _, j := range []int{2 * i, 2*i + 1} {
			if h.Counts[j] == 0 {
				continue
			}
			p50[i] = max(p50[i], float64(h.P50[j]))
			p95[i] = max(p95[i], float64(h.P95[j]))
			p99[i] = max(p99[i], float64(h.P99[j]))
		}
	}
	return p50, p95, p99
}

func peak(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
