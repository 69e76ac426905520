package worker

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/monitoring"
	"github.com/hookline/hookline/worker/sender"
)

// The reachability check (DESIGN §6): while the breaker of an endpoint
// whose partner stopped accepting connections is open, its owner asks
// every few seconds whether the partner's address accepts a TCP connection
// again, and when it does the breaker's probe is due at once instead of at
// the cooldown's end. A partner back after two minutes of an outage gets
// its backlog from then on, not three minutes later.
//
// It adds nothing to the probe but its timing: the probe is the same single
// delivery, started by the same conditional update (EndpointHealthStartProbes
// on the opened_at read: one replica wins) and claimed by the probe pass of
// the maintenance loop within probeEvery. A check is not an attempt: it
// sends nothing and is recorded nowhere but in a counter and a debug log.

// Defaults of Config.ReachEvery and Config.ReachInFlight.
const (
	// DefaultReachEvery is how often a partner that refused connections is
	// checked: one TCP handshake per 5 s is less than any partner's own
	// load balancer health checks, and a probe comes at most about 6 s
	// (the check, then the probe pass) after the partner is back.
	DefaultReachEvery = 5 * time.Second
	// DefaultReachInFlight bounds the checks in flight in one process:
	// with a dial timeout of at most ReachEvery, 16 cover 16 unreachable
	// partners a round whose dials all time out, and thousands that refuse
	// at once.
	DefaultReachInFlight = 16
)

// reachJitter spreads the rounds of replicas and restarts: each waits
// ReachEvery ± 20 %.
const reachJitter = 0.2

// reacherConfig wires the reachability checks.
type reacherConfig struct {
	// Pool reads the open breakers and starts the probes.
	Pool *pgxpool.Pool
	// Own is the shards this worker owns: it checks their endpoints only.
	Own     *ownership
	Breaker breaker.Policy
	// Every and InFlight are Config.ReachEvery and Config.ReachInFlight
	// (zero: the defaults; Every negative: no checks).
	Every    time.Duration
	InFlight int
	// Egress and SenderFor are the dispatcher's: the check dials as the
	// endpoint's deliveries would, through the same guard, and an egress
	// proxy rules it out.
	Egress    func(ctx context.Context, endpointID, rev int64) (*sender.Egress, error)
	SenderFor func(partnerURL bool) *sender.Sender
	Logger    *slog.Logger
	Now       func() time.Time
	DBNow     func() *time.Time
	Metrics   *Metrics
}

func (c reacherConfig) validate() error {
	switch {
	case c.Pool == nil, c.Own == nil:
		return errors.New("reacher: Pool and Own are required")
	case c.Egress == nil, c.SenderFor == nil:
		return errors.New("reacher: Egress and SenderFor are required")
	case c.Logger == nil:
		return errors.New("reacher: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("reacher: Now and DBNow are required")
	}
	return nil
}

// reacher runs the reachability checks of the open breakers of the
// endpoints this worker owns.
type reacher struct {
	cfg reacherConfig
	q   *db.Queries
	log *slog.Logger
	// rounds and checks count what the checks did, for tests to wait on
	// (as the claimer's claimPasses): rounds completed, checks made.
	rounds atomic.Int64
	checks atomic.Int64
}

func newReacher(cfg reacherConfig) (*reacher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultReachEvery
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultReachInFlight
	}
	return &reacher{cfg: cfg, q: db.New(cfg.Pool), log: cfg.Logger}, nil
}

// reachTarget is one endpoint to check in a round.
type reachTarget struct {
	endpointID int64
	openedAt   time.Time
	url        string
	egress     *sender.Egress
	send       *sender.Sender
	timeout    time.Duration
}

// Run runs the checks' rounds until ctx ends. Rounds never overlap: an
// endpoint is checked at most once a round.
func (r *reacher) Run(ctx context.Context) {
	every := r.cfg.Every
	if every < 0 {
		return // checks off: probes follow the cooldown alone
	}
	timer := time.NewTimer(jittered(every))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		if err := r.round(ctx, every, r.cfg.InFlight); err != nil && ctx.Err() == nil {
			r.log.Warn("breaker reachability checks", "err", err)
		}
		r.rounds.Add(1)
		// The next round starts one interval after this one started, and
		// never sooner than a tenth of it after this one ended.
		timer.Reset(max(jittered(every)-time.Since(start), every/10))
	}
}

func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - reachJitter + 2*reachJitter*rand.Float64()))
}

// round checks the endpoints of this worker's shards that
// breaker.Policy.ReachCheckDue selects, spread over one interval with at
// most inFlight checks at once.
func (r *reacher) round(ctx context.Context, every time.Duration, inFlight int) error {
	owned := r.cfg.Own.claimable()
	if owned.count() == 0 {
		return nil
	}
	rows, err := r.q.EndpointReachCandidates(ctx, owned[:])
	if err != nil {
		return err
	}
	targets := r.targets(ctx, rows, every)
	if len(targets) == 0 {
		return nil
	}
	// In a random order, so that with more targets than a round can
	// check before ctx ends none is always last.
	rand.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	spacing := every / time.Duration(len(targets))
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, t := range targets {
		if i > 0 && !sleepCtx(ctx, spacing) {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.check(ctx, t)
		})
	}
	return nil
}

// targets are the rows whose breaker the policy says to check now,
// with how to dial each: the sender its deliveries go out through (so the
// same guard judges the address) and its egress settings (a proxy rules
// the check out).
func (r *reacher) targets(ctx context.Context, rows []db.EndpointReachCandidatesRow, every time.Duration) []reachTarget {
	now := r.cfg.Now()
	var out []reachTarget
	for _, row := range rows {
		transport := row.LastErrorClass != nil && row.LastError != nil && sender.TransportFailure(*row.LastErrorClass, *row.LastError)
		if !transport || row.OpenedAt == nil {
			continue // the cooldown's schedule; nothing to read further
		}
		eg, err := r.cfg.Egress(ctx, row.EndpointID, row.EgressRev)
		if err != nil {
			continue // its probe will say why, at the cooldown's end
		}
		send := r.cfg.SenderFor(row.PartnerURL)
		h := breaker.Stored(row.State, row.ConsecutiveFailures, row.OpenedAt, row.CooldownSeconds, row.Paused)
		if !r.cfg.Breaker.ReachCheckDue(h, transport, send.Direct(eg), now) {
			continue
		}
		timeout := every
		if t := time.Duration(row.TimeoutMs) * time.Millisecond; t > 0 && t < timeout {
			timeout = t
		}
		out = append(out, reachTarget{endpointID: row.EndpointID, openedAt: *row.OpenedAt, url: row.URL,
			egress: eg, send: send, timeout: timeout})
	}
	return out
}

// check dials one partner; when it accepts, the breaker's probe is
// started now (if no replica and no other path started it since the
// breaker was read).
func (r *reacher) check(ctx context.Context, t reachTarget) {
	err := t.send.Reachable(ctx, t.url, t.egress, t.timeout)
	if ctx.Err() != nil {
		return
	}
	r.checks.Add(1)
	r.cfg.Metrics.observeReach(err == nil)
	if err != nil {
		r.log.Debug("breaker reachability check: no connection yet", "endpoint_id", t.endpointID, "err", err)
		return
	}
	r.log.Debug("breaker reachability check: the partner accepts connections", "endpoint_id", t.endpointID)
	started, err := r.q.EndpointHealthStartProbes(ctx, db.EndpointHealthStartProbesParams{
		Now: r.cfg.DBNow(), EndpointIds: []int64{t.endpointID}, OpenedAts: []time.Time{t.openedAt},
	})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			r.log.Warn("start breaker probe after reachability check", "endpoint_id", t.endpointID, "err", err)
		}
	case len(started) == 1:
		r.log.Info("partner accepts connections again: breaker probe now, not at the cooldown's end",
			"endpoint_id", t.endpointID, "open_for", r.cfg.Now().Sub(t.openedAt).Round(time.Second))
	}
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// newReachCounter is hookline_breaker_reachability_checks_total, both
// results starting at zero.
func newReachCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(monitoring.BreakerReachabilityChecks.CounterOpts(), monitoring.BreakerReachabilityChecks.Labels)
	c.WithLabelValues("accepted")
	c.WithLabelValues("failed")
	return c
}

func (m *Metrics) observeReach(accepted bool) {
	if m == nil {
		return
	}
	if accepted {
		m.reach.WithLabelValues("accepted").Inc()
	} else {
		m.reach.WithLabelValues("failed").Inc()
	}
}
