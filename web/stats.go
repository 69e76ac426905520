package web

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/worker/latency"
	"github.com/hookline/hookline/worker/monitoring"
)

// Alert thresholds (the article's three alerts), shared with the
// generated Prometheus rules.
const (
	oldestPendingAlert = monitoring.OldestPendingAlert
	deadCriticalCount  = monitoring.DeadCriticalPerHour
)

// pipelineStats is the article's one-row health summary plus its alerts.
type pipelineStats struct {
	Pending              int64   `json:"pending"`
	AwaitingRetry        int64   `json:"awaiting_retry"`
	InFlight             int64   `json:"in_flight"`
	Dead                 int64   `json:"dead"`
	DeliveredLastHour    int64   `json:"delivered_last_hour"`
	FailedLastHour       int64   `json:"failed_last_hour"`
	DeadLastHour         int64   `json:"dead_last_hour"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	AvgDeliveryMsHour    float64 `json:"avg_delivery_ms_last_hour"`
	// CountsEstimated names the counts above (pending, awaiting_retry,
	// dead) that are estimates: more than queueCountCap deliveries.
	CountsEstimated []string  `json:"counts_estimated,omitempty"`
	Alerts          []alert   `json:"alerts"`
	GeneratedAt     time.Time `json:"generated_at"`
}

type alert struct {
	Kind      string          `json:"kind"`     // dead_letters_rising | oldest_pending | slow_endpoints
	Severity  string          `json:"severity"` // warn | critical
	Message   string          `json:"message"`
	Endpoints []alertEndpoint `json:"endpoints,omitempty"`
}

type alertEndpoint struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Partner     string   `json:"partner,omitempty"`
	Dead        int64    `json:"dead,omitempty"`
	P95Ms       *float64 `json:"p95_ms,omitempty"`
	RecentP95Ms *float64 `json:"recent_p95_ms,omitempty"`
	Latency     string   `json:"latency,omitempty"` // slow | critical
	State       string   `json:"state,omitempty"`
	Failures    int32    `json:"consecutive_failures"`
}

// count formats the summary's count of name: "≈ 1,234,567" when it is an
// estimate (CountsEstimated).
func (st pipelineStats) count(name string, n int64) string {
	if slices.Contains(st.CountsEstimated, name) {
		return "≈ " + components.Count(n)
	}
	return components.Count(n)
}

// queueCounts are the queue's deliveries by state.
type queueCounts struct{ pending, awaitingRetry, inFlight int64 }

// queueOf splits the summary's counts into states. Deliveries a worker
// holds are still pending or awaiting retry in the table (claims write
// nothing): they count as in flight instead, with the probes leased in the
// table. The workers' figures are a heartbeat old, so they may exceed the
// rows they stand for.
func queueOf(row db.PipelineStatsRow) queueCounts {
	first := max(row.Held-row.HeldRetries, 0)
	return queueCounts{
		pending:       max(row.Pending-first, 0),
		awaitingRetry: max(row.AwaitingRetry-row.HeldRetries, 0),
		inFlight:      row.Leased + row.Held,
	}
}

// queueCountCap is how many deliveries of a status the pipeline summary
// counts before it takes the planner's estimate instead (PipelineStats):
// counting reads every row, about 20 ms for 100,000 on this project's
// machine, and the summary is read by every metrics scrape, every open
// overview (each 5 s) and the alert watch. Tests lower it.
var queueCountCap int64 = monitoring.QueueCountCap

// pipelineRow reads the summary's row. A status whose count reached
// queueCountCap gets the planner's estimate of its rows instead (never
// less than the cap), and its name (as the API calls it) in estimated.
func (s *Server) pipelineRow(ctx context.Context) (row db.PipelineStatsRow, estimated []string, err error) {
	row, err = s.q.PipelineStats(ctx, db.PipelineStatsParams{CountCap: queueCountCap})
	if err != nil {
		return row, nil, err
	}
	counts := []struct {
		status, name string
		n            *int64
	}{{"pending", "pending", &row.Pending}, {"failed", "awaiting_retry", &row.AwaitingRetry}, {"dead", "dead", &row.Dead}}
	var capped bool
	for _, c := range counts {
		capped = capped || *c.n >= queueCountCap
	}
	if !capped {
		return row, nil, nil
	}
	ests, err := s.q.QueueStatusEstimates(ctx)
	if err != nil {
		return row, nil, err
	}
	for _, c := range counts {
		if *c.n < queueCountCap {
			continue
		}
		for _, e := range ests {
			if e.Status == c.status {
				*c.n = max(*c.n, e.Estimate)
			}
		}
		estimated = append(estimated, c.name)
	}
	return row, estimated, nil
}

// pipelineStats reads the summary: counts that stop at queueCountCap, an
// index probe for the oldest waiting delivery and sums over the minute
// histograms, cheap enough to refresh every few seconds whatever the
// backlog.
func (s *Server) pipelineStats(ctx context.Context) (pipelineStats, error) {
	now := s.now()
	row, estimated, err := s.pipelineRow(ctx)
	if err != nil {
		return pipelineStats{}, err
	}
	unsent, err := s.unsentDead(ctx, now.Add(-time.Hour), now.Add(-time.Hour), nil)
	if err != nil {
		return pipelineStats{}, err
	}
	for _, u := range unsent {
		row.FailedLastHour += u.Dead
	}
	q := queueOf(row)
	st := pipelineStats{
		Pending: q.pending, AwaitingRetry: q.awaitingRetry, InFlight: q.inFlight, Dead: row.Dead,
		DeliveredLastHour: row.OkAttemptsLastHour, FailedLastHour: row.FailedLastHour,
		DeadLastHour: row.DeadLastHour, OldestPendingSeconds: max(row.OldestPendingSeconds, 0),
		AvgDeliveryMsHour: row.AvgAttemptMsLastHour, CountsEstimated: estimated, Alerts: []alert{}, GeneratedAt: now.UTC(),
	}
	if row.DeadLastHour > 0 && row.DeadLastHour > row.DeadPreviousHour {
		a := alert{Kind: "dead_letters_rising", Severity: "warn",
			Message: fmt.Sprintf("%d deliveries went dead in the last hour (%d the hour before): endpoints are failing permanently and nobody is replaying", row.DeadLastHour, row.DeadPreviousHour)}
		if row.DeadLastHour >= deadCriticalCount {
			a.Severity = "critical"
		}
		rows, err := s.q.StatsDeadByEndpoint(ctx, now.Add(-time.Hour))
		if err != nil {
			return pipelineStats{}, err
		}
		for _, r := range rows {
			a.Endpoints = append(a.Endpoints, alertEndpoint{ID: r.EndpointID, Name: r.Name, Dead: r.Dead})
		}
		st.Alerts = append(st.Alerts, a)
	}
	if age := time.Duration(st.OldestPendingSeconds * float64(time.Second)); age > oldestPendingAlert {
		st.Alerts = append(st.Alerts, alert{Kind: "oldest_pending", Severity: "critical",
			Message: fmt.Sprintf("the oldest waiting delivery is %s old: delivery is late (workers stuck, an endpoint blocked, or the queue grows faster than it drains)", age.Round(time.Minute))})
	}
	slow, err := s.q.StatsSlowEndpoints(ctx, db.StatsSlowEndpointsParams{
		SlowMs: float64(latency.SlowP95 / time.Millisecond), MinSamples: latency.MinSamples})
	if err != nil {
		return pipelineStats{}, err
	}
	if len(slow) > 0 {
		a := alert{Kind: "slow_endpoints", Severity: "warn"}
		for _, r := range slow {
			flag := worstFlag(r.RecentP95Ms, r.RecentSampleCount, r.P95Ms, r.SampleCount)
			if flag == latency.FlagCritical {
				a.Severity = "critical"
			}
			a.Endpoints = append(a.Endpoints, alertEndpoint{ID: r.ID, Name: r.Name, Partner: r.PartnerName,
				P95Ms: r.P95Ms, RecentP95Ms: r.RecentP95Ms, Latency: string(flag), State: r.State, Failures: r.ConsecutiveFailures})
		}
		a.Message = fmt.Sprintf("%d endpoint(s) answer slowly (P95 over 2 s): latency rises before failures do", len(slow))
		st.Alerts = append(st.Alerts, a)
	}
	return st, nil
}

// unsentFailure is what the histograms miss of an endpoint's failures: its
// dead deliveries whose last attempt was never sent.
type unsentFailure struct {
	Dead int64     // since the count's start
	Last time.Time // the newest one in the wider window; zero when none
}

// unsentDead reads, per endpoint (or for one), the dead deliveries since
// countSince whose last attempt never reached the partner, and the newest
// one since since (the earlier of the two).
func (s *Server) unsentDead(ctx context.Context, countSince, since time.Time, endpointID *int64) (map[int64]unsentFailure, error) {
	rows, err := s.q.StatsUnsentDead(ctx, db.StatsUnsentDeadParams{CountSince: countSince, Since: since, EndpointID: endpointID})
	if err != nil {
		return nil, fmt.Errorf("unsent dead deliveries: %w", err)
	}
	out := make(map[int64]unsentFailure, len(rows))
	for _, r := range rows {
		out[r.EndpointID] = unsentFailure{Dead: r.Dead, Last: r.LastDeadAt}
	}
	return out, nil
}

// successRate is the share of an endpoint's attempts in the 24 h window
// that succeeded, counting its dead deliveries that were never sent as
// failed attempts; nil without any attempt.
func successRate(h db.EndpointHealth, unsent int64) *float64 {
	n := h.SampleCount + unsent
	if n <= 0 {
		return nil
	}
	rate := float64(h.OkCount) / float64(n)
	return &rate
}

// worstFlag is the more severe of an endpoint's recent and 24 h latency flags.
func worstFlag(recent *float64, recentN int64, day *float64, dayN int64) latency.Flag {
	r := latency.FlagFor(latency.FromMs(deref(recent)), recentN, latency.MinSamples)
	d := latency.FlagFor(latency.FromMs(deref(day)), dayN, latency.MinSamples)
	rank := map[latency.Flag]int{latency.FlagOK: 0, latency.FlagSlow: 1, latency.FlagCritical: 2}
	if rank[d] > rank[r] {
		return d
	}
	return r
}
