package worker

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

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

// reachStats counts what the checks did, for tests to wait on (as
// claimPasses): rounds completed, and checks made.
type reachStats struct {
	rounds atomic.Int64
	checks atomic.Int64
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

// reachLoop runs the checks' rounds until ctx ends. Rounds never overlap:
// an endpoint is checked at most once a round.
func (w *Worker) reachLoop(ctx context.Context) {
	every := w.cfg.ReachEvery
	if every < 0 {
		return // checks off: probes follow the cooldown alone
	}
	if every == 0 {
		every = DefaultReachEvery
	}
	inFlight := w.cfg.ReachInFlight
	if inFlight <= 0 {
		inFlight = DefaultReachInFlight
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
		if err := w.reachRound(ctx, every, inFlight); err != nil && ctx.Err() == nil {
			w.log.Warn("breaker reachability checks", "err", err)
		}
		w.reach.rounds.Add(1)
		// The next round starts one interval after this one started, and
		// never sooner than a tenth of it after this one ended.
		timer.Reset(max(jittered(every)-time.Since(start), every/10))
	}
}

func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - reachJitter + 2*reachJitter*rand.Float64()))
}

// reachRound checks the endpoints of this worker's shards that
// breaker.Policy.ReachCheckDue selects, spread over one interval with at
// most inFlight checks at once.
func (w *Worker) reachRound(ctx context.Context, every time.Duration, inFlight int) error {
	owned := w.own.claimable()
	if owned.count() == 0 {
		return nil
	}
	rows, err := w.q.EndpointReachCandidates(ctx, owned[:])
	if err != nil {
		return err
	}
	targets := w.reachTargets(ctx, rows, every)
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
			w.reachCheck(ctx, t)
		})
	}
	return nil
}

// reachTargets are the rows whose breaker the policy says to check now,
// with how to dial each: the sender its deliveries go out through (so the
// same guard judges the address) and its egress settings (a proxy rules
// the check out).
func (w *Worker) reachTargets(ctx context.Context, rows []db.EndpointReachCandidatesRow, every time.Duration) []reachTarget {
	now := w.now()
	var out []reachTarget
	for _, r := range rows {
		transport := r.LastErrorClass != nil && r.LastError != nil && sender.TransportFailure(*r.LastErrorClass, *r.LastError)
		if !transport || r.OpenedAt == nil {
			continue // the cooldown's schedule; nothing to read further
		}
		eg, err := w.egressFor(ctx, r.EndpointID, r.EgressRev)
		if err != nil {
			continue // its probe will say why, at the cooldown's end
		}
		send := w.senderFor(r.PartnerURL)
		h := breaker.Stored(r.State, r.ConsecutiveFailures, r.OpenedAt, r.CooldownSeconds, r.Paused)
		if !w.breaker.ReachCheckDue(h, transport, send.Direct(eg), now) {
			continue
		}
		timeout := every
		if t := time.Duration(r.TimeoutMs) * time.Millisecond; t > 0 && t < timeout {
			timeout = t
		}
		out = append(out, reachTarget{endpointID: r.EndpointID, openedAt: *r.OpenedAt, url: r.URL,
			egress: eg, send: send, timeout: timeout})
	}
	return out
}

// reachCheck dials one partner; when it accepts, the breaker's probe is
// started now (if no replica and no other path started it since the
// breaker was read).
func (w *Worker) reachCheck(ctx context.Context, t reachTarget) {
	err := t.send.Reachable(ctx, t.url, t.egress, t.timeout)
	if ctx.Err() != nil {
		return
	}
	w.reach.checks.Add(1)
	w.metrics.observeReach(err == nil)
	if err != nil {
		w.log.Debug("breaker reachability check: no connection yet", "endpoint_id", t.endpointID, "err", err)
		return
	}
	w.log.Debug("breaker reachability check: the partner accepts connections", "endpoint_id", t.endpointID)
	started, err := w.q.EndpointHealthStartProbes(ctx, db.EndpointHealthStartProbesParams{
		Now: w.dbNow(), EndpointIds: []int64{t.endpointID}, OpenedAts: []time.Time{t.openedAt},
	})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			w.log.Warn("start breaker probe after reachability check", "endpoint_id", t.endpointID, "err", err)
		}
	case len(started) == 1:
		w.log.Info("partner accepts connections again: breaker probe now, not at the cooldown's end",
			"endpoint_id", t.endpointID, "open_for", w.now().Sub(t.openedAt).Round(time.Second))
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
