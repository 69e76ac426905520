package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/events"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/overview"
	"github.com/hookline/hookline/worker/latency"
)

// overviewPage: GET /
func (s *Server) overviewPage(c echo.Context) error {
	l, err := s.overviewLive(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, overview.Page(s.meta(c, "Overview", layout.NavOverview), l))
}

// overviewLiveFragment: GET /overview/live
func (s *Server) overviewLiveFragment(c echo.Context) error {
	l, err := s.overviewLive(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, overview.LiveFragment(l))
}

func (s *Server) overviewLive(ctx context.Context) (overview.Live, error) {
	st, err := s.pipelineStats(ctx)
	if err != nil {
		return overview.Live{}, err
	}
	chart, err := s.pipelineChart(ctx)
	if err != nil {
		return overview.Live{}, err
	}
	now := s.now()
	l := overview.Live{Now: now, Chart: chart}
	oldest := time.Duration(st.OldestPendingSeconds * float64(time.Second))
	l.Tiles = []components.TileData{
		{ID: "tile-pending", Label: "Pending", Value: st.count("pending", st.Pending), Hint: "waiting for their first attempt", Tone: components.ToneInfo,
			Href: events.Filter{Status: "pending"}.URL()},
		{ID: "tile-retry", Label: "Awaiting retry", Value: st.count("awaiting_retry", st.AwaitingRetry), Hint: "failed, backing off", Tone: toneIf(st.AwaitingRetry > 0, components.ToneWarn, components.ToneInfo),
			Href: events.Filter{Status: "awaiting_retry"}.URL()},
		// What the workers hold (their heartbeats, a few seconds old):
		// claims write nothing, so no filter of the event log lists these.
		{ID: "tile-in-flight", Label: "In flight", Value: components.Count(st.InFlight), Hint: "being sent now", Tone: components.ToneInfo},
		// The dead letters of the last hour, newest first: what the
		// number's colour is about. The dead-letter clusters are one
		// click away in the header.
		{ID: "tile-dead", Label: "Dead letters", Value: st.count("dead", st.Dead), Hint: fmt.Sprintf("%s in the last hour", components.Count(st.DeadLastHour)), Tone: toneIf(st.DeadLastHour > 0, components.ToneCritical, components.ToneMuted),
			Href: events.Filter{Status: "dead", Since: events.TimeText(now.Add(-time.Hour), false)}.URL()},
		{ID: "tile-delivered", Label: "Delivered, last hour", Value: components.Count(st.DeliveredLastHour), Tone: components.ToneOK,
			Href: events.Filter{Status: "delivered", Since: events.TimeText(now.Add(-time.Hour), false)}.URL()},
		{ID: "tile-failed", Label: "Failed attempts, last hour", Value: components.Count(st.FailedLastHour), Tone: toneIf(st.FailedLastHour > 0, components.ToneWarn, components.ToneMuted)},
		{ID: "tile-oldest", Label: "Oldest pending", Value: ageText(oldest), Hint: "alert above 30 min", Tone: toneIf(oldest > oldestPendingAlert, components.ToneCritical, toneIf(oldest > 5*time.Minute, components.ToneWarn, components.ToneOK))},
		{ID: "tile-avg", Label: "Average attempt, last hour", Value: components.Ms(st.AvgDeliveryMsHour), Tone: components.ToneInfo},
	}
	for _, a := range st.Alerts {
		l.Alerts = append(l.Alerts, alertView(a, now))
	}
	l.Quiet = st.Pending+st.AwaitingRetry+st.InFlight+st.Dead+st.DeliveredLastHour+st.FailedLastHour == 0
	return l, nil
}

func toneIf(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

func ageText(d time.Duration) string {
	switch {
	case d <= 0:
		return "none"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// alertView turns an API alert into a banner linking to the endpoints it
// names.
//
// A dead-letter alert's endpoints open the event log at their dead
// deliveries of the last hour (what the alert counts); a late-delivery
// alert links to the waiting events; a slow endpoint opens its page.
func alertView(a alert, now time.Time) components.AlertData {
	v := components.AlertData{Tone: a.Severity, Message: a.Message}
	endpointHref := func(id int64) string { return "/endpoints/" + strconv.FormatInt(id, 10) }
	switch a.Kind {
	case "dead_letters_rising":
		v.Title = "Dead letters are rising"
		v.Links = append(v.Links, components.Link{Label: "Open the dead letters", Href: "/dead-letters"})
		hourAgo := events.TimeText(now.Add(-time.Hour), false)
		endpointHref = func(id int64) string {
			return events.Filter{EndpointID: id, Status: "dead", Since: hourAgo}.URL()
		}
	case "oldest_pending":
		v.Title = "Delivery is late"
		v.Links = append(v.Links, components.Link{Label: "Endpoints by queue", Href: "/endpoints?sort=queue"},
			components.Link{Label: "Waiting events", Href: events.Filter{Status: "pending"}.URL()})
	case "slow_endpoints":
		v.Title = "Endpoints are getting slower"
		v.Links = append(v.Links, components.Link{Label: "All slow endpoints", Href: "/endpoints?show=slow&sort=p95"})
	}
	for i, e := range a.Endpoints {
		if i == 5 {
			break
		}
		label := e.Name
		switch {
		case e.Dead > 0:
			label += fmt.Sprintf(" (%d dead)", e.Dead)
		case e.RecentP95Ms != nil || e.P95Ms != nil:
			label += " (P95 " + components.Ms(max(deref(e.RecentP95Ms), deref(e.P95Ms))) + ")"
		}
		v.Links = append(v.Links, components.Link{Label: label, Href: endpointHref(e.ID)})
	}
	return v
}

// pipelineChart merges every endpoint's 15-minute histograms of the last 6
// hours slot by slot (percentiles of the whole pipeline, from buckets, never
// averaged). Cached for 15 s: every open overview refreshes every 5 s.
func (s *Server) pipelineChart(ctx context.Context) (components.ChartData, error) {
	s.chartMu.Lock()
	defer s.chartMu.Unlock()
	now := s.now()
	if now.Sub(s.chartAt) < 15*time.Second && s.chart.Step > 0 {
		return s.chart, nil
	}
	const step = 15 * time.Minute
	const slots = 24
	start := now.UTC().Truncate(step).Add(-(slots - 1) * step)
	rows, err := s.q.LatencySince(ctx, db.LatencySinceParams{ResolutionSeconds: 900, Since: start})
	if err != nil {
		return components.ChartData{}, err
	}
	merged := map[time.Time]*latency.Histogram{}
	var scratch latency.Histogram
	for _, r := range rows {
		if err := scratch.UnmarshalBinary(r.Buckets); err != nil {
			continue
		}
		k := r.BucketStart.UTC()
		if merged[k] == nil {
			merged[k] = &latency.Histogram{}
		}
		merged[k].Merge(&scratch)
	}
	c := components.ChartData{Label: "All endpoints", Start: start, Step: step, Now: now, Points: make([]components.SparkPoint, slots)}
	for i := range slots {
		h := merged[start.Add(time.Duration(i)*step)]
		if h == nil || h.Count() == 0 {
			continue
		}
		c.Points[i] = components.SparkPoint{P50: latency.Ms(h.Quantile(0.5)), P95: latency.Ms(h.Quantile(0.95)), P99: latency.Ms(h.Quantile(0.99)), Count: int(h.Count())}
	}
	s.chart, s.chartAt = c, now
	return c, nil
}

// chartCache is the overview chart's short cache.
type chartCache struct {
	chartMu sync.Mutex
	chart   components.ChartData
	chartAt time.Time
}
