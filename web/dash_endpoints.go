package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/endpoints"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/latency"
)

// endpointsPage: GET /endpoints
func (s *Server) endpointsPage(c echo.Context) error {
	t, err := s.endpointsTable(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoints.Page(s.meta(c, "Endpoints", layout.NavEndpoints), t))
}

// endpointsTableFragment: GET /endpoints/table (htmx live refresh and filter)
func (s *Server) endpointsTableFragment(c echo.Context) error {
	t, err := s.endpointsTable(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoints.TableFragment(t))
}

func filterOf(c echo.Context) endpoints.Filter {
	f := endpoints.Filter{Q: strings.TrimSpace(c.QueryParam("q")), Show: c.QueryParam("show"), Sort: c.QueryParam("sort")}
	switch f.Show {
	case "", "slow", "open", "disabled":
	default:
		f.Show = ""
	}
	switch f.Sort {
	case "name", "p95", "failures", "dead", "queue":
	default:
		f.Sort = "name"
	}
	return f
}

// endpointsTable builds the table in three queries whatever the number of
// endpoints: configuration with cached health (sparklines included), queue
// depths and dead-letter counts. Filtering and sorting happen here.
func (s *Server) endpointsTable(c echo.Context) (endpoints.Table, error) {
	ctx := c.Request().Context()
	f := filterOf(c)
	rows, queues, dead, err := s.endpointData(ctx)
	if err != nil {
		return endpoints.Table{}, err
	}
	now := s.now()
	unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-24*time.Hour), nil)
	if err != nil {
		return endpoints.Table{}, err
	}
	t := endpoints.Table{Filter: f, Total: len(rows), Now: now, CanOperate: principalOf(c).can(account.RoleOperator)}
	q := strings.ToLower(f.Q)
	for _, r := range rows {
		row := endpointRow(r, queues[r.Endpoint.ID], dead[r.Endpoint.ID], unsent[r.Endpoint.ID].Dead, now)
		if q != "" && !strings.Contains(strings.ToLower(row.Name), q) && !strings.Contains(strings.ToLower(row.Partner), q) && !strings.Contains(strings.ToLower(row.Host), q) {
			continue
		}
		switch f.Show {
		case "slow":
			if row.Latency != "slow" && row.Latency != "critical" {
				continue
			}
		case "open":
			if row.Breaker.State == "closed" && !row.Breaker.Paused {
				continue
			}
		case "disabled":
			if row.Breaker.Enabled {
				continue
			}
		}
		t.Rows = append(t.Rows, row)
	}
	sortRows(t.Rows, f.Sort)
	return t, nil
}

func (s *Server) endpointData(ctx context.Context) ([]db.EndpointListWithHealthRow, map[int64]int64, map[int64]int64, error) {
	rows, err := s.q.EndpointListWithHealth(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	qd, err := s.q.EndpointQueueDepths(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	dd, err := s.q.EndpointDeadCounts(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	queues := make(map[int64]int64, len(qd))
	for _, r := range qd {
		queues[r.EndpointID] = r.Queued
	}
	dead := make(map[int64]int64, len(dd))
	for _, r := range dd {
		dead[r.EndpointID] = r.Dead
	}
	return rows, queues, dead, nil
}

func sortRows(rows []endpoints.Row, by string) {
	val := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	slices.SortStableFunc(rows, func(a, b endpoints.Row) int {
		switch by {
		case "p95":
			return cmp.Compare(max(val(b.P95), val(b.RecentP95)), max(val(a.P95), val(a.RecentP95)))
		case "failures":
			if c := cmp.Compare(b.Failures, a.Failures); c != 0 {
				return c
			}
			return cmp.Compare(successOr(a.SuccessRate), successOr(b.SuccessRate))
		case "dead":
			return cmp.Compare(b.Dead, a.Dead)
		case "queue":
			return cmp.Compare(b.Queue, a.Queue)
		}
		return cmp.Or(cmp.Compare(strings.ToLower(a.Partner), strings.ToLower(b.Partner)), cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)))
	})
}

func successOr(p *float64) float64 {
	if p == nil {
		return 2
	}
	return *p
}

// endpointRow maps one endpoint with its health to the table's row; unsent
// is its dead deliveries of the last 24 h that were never sent, failures
// the cached health (from the latency histograms) does not count.
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
	row.Spark50, row.Spark95, row.Spark99 = sparkSeries(h)
	row.MaxMs = max(peak(row.Spark99), peak(row.Spark95), peak(row.Spark50))
	return row
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
func sparkSeries(h db.EndpointHealth) (p50, p95, p99 []float64) {
	n := len(h.SparkCount)
	if n == 0 || n%2 != 0 || len(h.SparkP50) != n || len(h.SparkP95) != n || len(h.SparkP99) != n {
		return nil, nil, nil
	}
	m := n / 2
	p50, p95, p99 = make([]float64, m), make([]float64, m), make([]float64, m)
	for i := range m {
		p50[i], p95[i], p99[i] = -1, -1, -1
		for _, j := range []int{2 * i, 2*i + 1} {
			if h.SparkCount[j] == 0 {
				continue
			}
			p50[i] = max(p50[i], float64(h.SparkP50[j]))
			p95[i] = max(p95[i], float64(h.SparkP95[j]))
			p99[i] = max(p99[i], float64(h.SparkP99[j]))
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

func breakerData(e db.Endpoint, h db.EndpointHealth, now time.Time) components.BreakerData {
	b := components.BreakerData{State: h.State, Paused: h.Paused, Enabled: e.Enabled, DisabledReason: e.DisabledReason, Now: now}
	b.NextProbe = nextProbeAt(h)
	b.Budget = budgetData(e, h, now)
	return b
}

// breakerHealth is the breaker package's view of a stored endpoint_health
// row.
func breakerHealth(h db.EndpointHealth) breaker.Health {
	b := breaker.Health{State: breaker.State(h.State), ConsecutiveFailures: int(h.ConsecutiveFailures),
		Cooldown: time.Duration(h.CooldownSeconds) * time.Second, Paused: h.Paused}
	if h.OpenedAt != nil {
		b.OpenedAt = *h.OpenedAt
	}
	return b
}

// nextProbeAt is when the worker will probe an open breaker, nil when no
// probe is scheduled (closed, half open, or paused by an operator).
func nextProbeAt(h db.EndpointHealth) *time.Time {
	if h.OpenedAt == nil { // not open, or a row no breaker transition wrote
		return nil
	}
	t := breaker.DefaultPolicy().NextProbeAt(breakerHealth(h))
	if t.IsZero() {
		return nil
	}
	return &t
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
