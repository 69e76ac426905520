// Package breaker owns hookline's per-endpoint circuit breaker: the
// closed → open → half_open state machine of DESIGN §6, the threshold
// lowering for slow endpoints, and the operator's pause, resume and force
// close.
//
// The breaker's state lives in PostgreSQL (endpoint_health) and is shared by
// every replica. This package only computes transitions: each function is a
// pure function of the current Health, the event, the time and the Policy.
// The worker reads the row under a row lock, applies the functions in order
// and writes the result back in the same transaction, so two replicas can
// never interleave half of a transition.
package breaker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

// State is the breaker state as stored in endpoint_health.state.
type State string

const (
	// Closed: deliveries flow normally.
	Closed State = "closed"
	// Open: the endpoint's due deliveries are not claimed, so a broken
	// partner neither holds workers nor burns its deliveries' attempts.
	Open State = "open"
	// HalfOpen: exactly one probe delivery is in flight; its result
	// decides between Closed and Open.
	HalfOpen State = "half_open"
)

// Valid reports whether s is one of the three stored states.
func (s State) Valid() bool {
	switch s {
	case Closed, Open, HalfOpen:
		return true
	}
	return false
}

// Health is one endpoint's breaker row. The transition functions take and
// return it by value and never modify their argument.
//
// A Health whose State is not Valid (the zero Health of an endpoint that
// has never failed) is treated as Closed; a Paused Health is always Open.
type Health struct {
	State               State
	ConsecutiveFailures int
	// OpenedAt is when the breaker last opened, zero while Closed. While
	// HalfOpen it is when the probe started: that is what tells a probe
	// lost with its worker from one still in flight.
	OpenedAt time.Time
	// Cooldown is how long an Open breaker waits before probing. It starts
	// at Policy.BaseCooldown and doubles with every failed probe.
	Cooldown time.Duration
	// Paused means an operator forced the breaker open: no automatic probe
	// until the operator resumes it.
	Paused        bool
	LastSuccessAt time.Time
	LastFailureAt time.Time
}

// Stored is the Health of a stored endpoint_health row, whichever query
// read it: the one mapping of the row's columns (state, failures, when it
// opened, cooldown in seconds, paused) to the breaker's view. Timestamps
// of the last success and failure are the caller's to add when it read
// them.
func Stored(state string, consecutiveFailures int32, openedAt *time.Time, cooldownSeconds int32, paused bool) Health {
	h := Health{State: State(state), ConsecutiveFailures: int(consecutiveFailures),
		Cooldown: time.Duration(cooldownSeconds) * time.Second, Paused: paused}
	if openedAt != nil {
		h.OpenedAt = *openedAt
	}
	return h
}

// Policy holds the breaker's tuning. Build one with DefaultPolicy and check
// any other with Validate; the transition functions assume a valid Policy.
type Policy struct {
	// BaseCooldown is the first wait before probing an Open breaker.
	// It also bounds how long a half-open probe may go unanswered before
	// another is sent, so it must exceed the longest send (timeout plus
	// lease); the default 300 s is well above the 120 s timeout ceiling.
	BaseCooldown time.Duration
	// MaxCooldown bounds the doubling after failed probes, so a recovered
	// partner waits at most this long to be probed again.
	MaxCooldown time.Duration
	// MinThreshold is the floor of the lowered threshold of a slow endpoint.
	MinThreshold int
	// SlowP95 is the P95 latency above which an endpoint counts as slow:
	// each of its failures holds a worker for a long time, so the breaker
	// opens after fewer of them.
	SlowP95 time.Duration
	// MinSamples is how many latency samples the P95 needs before it may
	// lower the threshold; a P95 of a handful of requests is noise.
	MinSamples int
}

// Defaults from DESIGN §6 and §7. What counts as slow, and on how much
// evidence, is the latency package's: the dashboard's "critical" flag and
// the lowered threshold must never disagree.
const (
	DefaultBaseCooldown = 300 * time.Second
	DefaultMaxCooldown  = 3600 * time.Second
	DefaultMinThreshold = 3
	DefaultSlowP95      = latency.CriticalP95
	DefaultMinSamples   = latency.MinSamples
)

// DefaultPolicy returns the policy of DESIGN §6: cooldown 300 s doubling up
// to 3600 s, and the threshold halved (never below 3) while P95 > 5 s over at
// least 20 samples.
func DefaultPolicy() Policy {
	return Policy{
		BaseCooldown: DefaultBaseCooldown,
		MaxCooldown:  DefaultMaxCooldown,
		MinThreshold: DefaultMinThreshold,
		SlowP95:      DefaultSlowP95,
		MinSamples:   DefaultMinSamples,
	}
}

// Validate reports every invalid field of p.
func (p Policy) Validate() error {
	var errs []error
	if p.BaseCooldown <= 0 {
		errs = append(errs, fmt.Errorf("breaker base cooldown must be positive, got %s", p.BaseCooldown))
	}
	if p.MaxCooldown < p.BaseCooldown {
		errs = append(errs, fmt.Errorf("breaker max cooldown %s is below base cooldown %s", p.MaxCooldown, p.BaseCooldown))
	}
	if p.MinThreshold < 1 {
		errs = append(errs, fmt.Errorf("breaker min threshold must be at least 1, got %d", p.MinThreshold))
	}
	if p.SlowP95 <= 0 {
		errs = append(errs, fmt.Errorf("breaker slow P95 must be positive, got %s", p.SlowP95))
	}
	if p.MinSamples < 1 {
		errs = append(errs, fmt.Errorf("breaker min samples must be at least 1, got %d", p.MinSamples))
	}
	return errors.Join(errs...)
}

// EffectiveThreshold is the number of consecutive failures that opens the
// breaker of an endpoint configured with failure_threshold configured and
// whose rolling P95 is p95 over samples samples.
//
// While the endpoint is slow (p95 > SlowP95 with at least MinSamples
// samples) the threshold is halved, rounding down, but never below
// MinThreshold and never above configured: slowness may only make the
// breaker quicker to open. A configured value below 1 counts as 1.
func (p Policy) EffectiveThreshold(configured int, p95 time.Duration, samples int) int {
	configured = max(configured, 1)
	if samples < p.MinSamples || p95 <= p.SlowP95 {
		return configured
	}
	return min(max(configured/2, p.MinThreshold), configured)
}

// ThresholdNow is EffectiveThreshold judged on how slow the endpoint is now:
// its recent P95 (the last minutes) when that has MinSamples, otherwise its
// 24 h P95. A 24 h P95 rises only after hours of slow answers, long after
// slow sends started holding workers.
func (p Policy) ThresholdNow(configured int, recentP95 time.Duration, recentSamples int, dayP95 time.Duration, daySamples int) int {
	if recentSamples >= p.MinSamples {
		return p.EffectiveThreshold(configured, recentP95, recentSamples)
	}
	return p.EffectiveThreshold(configured, dayP95, daySamples)
}

// Success records a delivery that succeeded at now, normal or probe: the
// failure count and the cooldown reset, and the breaker closes.
//
// A success reported while Open closes it too: it comes from a send that
// started before the breaker opened, and the endpoint answered. A Paused
// breaker stays Open: an operator's decision is not overridden by traffic.
func (p Policy) Success(h Health, now time.Time) Health {
	h = p.normalize(h)
	h.ConsecutiveFailures = 0
	h.Cooldown = p.BaseCooldown
	h.LastSuccessAt = later(h.LastSuccessAt, now)
	if h.Paused {
		return h
	}
	h.State = Closed
	h.OpenedAt = time.Time{}
	return h
}

// Failure records a delivery that failed at now (any class that counts
// toward the breaker), with threshold from EffectiveThreshold.
//
//   - Closed: the breaker opens once the consecutive failures reach
//     threshold, with the base cooldown.
//   - HalfOpen: the probe failed, so the breaker reopens with its cooldown
//     doubled (at most MaxCooldown): a partner still failing after one
//     cooldown is unlikely to recover in the next, and probing it at a
//     fixed interval would turn the breaker into a periodic hammer.
//   - Open: the failure comes from a send that was in flight when the
//     breaker opened. It is counted, but neither OpenedAt nor the cooldown
//     moves, or a burst of in-flight failures would postpone the probe.
func (p Policy) Failure(h Health, threshold int, now time.Time) Health {
	h = p.normalize(h)
	// consecutive_failures is a PostgreSQL integer: saturate rather than
	// wrap for an endpoint that fails for years.
	if h.ConsecutiveFailures < math.MaxInt32 {
		h.ConsecutiveFailures++
	}
	h.LastFailureAt = later(h.LastFailureAt, now)
	switch h.State {
	case Closed:
		if h.ConsecutiveFailures >= max(threshold, 1) {
			h.State = Open
			h.OpenedAt = now
			h.Cooldown = p.BaseCooldown
		}
	case HalfOpen:
		h.State = Open
		h.OpenedAt = now
		h.Cooldown = min(2*h.Cooldown, p.MaxCooldown)
	}
	return h
}

// Record folds in one attempt that counts toward the breaker, finished at
// at: Success when ok, otherwise Failure with threshold. probe says whether
// the attempt was the probe of a HalfOpen breaker. While HalfOpen only the
// probe's failure reopens it: a failure of a send that started before the
// probe is only noted in LastFailureAt, since the probe is the one question
// being asked. Any success closes it (the partner answered).
func (p Policy) Record(h Health, threshold int, ok, probe bool, at time.Time) Health {
	switch {
	case ok:
		return p.Success(h, at)
	case h.State == HalfOpen && !probe:
		h.LastFailureAt = later(h.LastFailureAt, at)
		return h
	default:
		return p.Failure(h, threshold, at)
	}
}

// ProbeDue reports whether a probe should be sent at now: the breaker is
// not Paused and one cooldown has passed since it opened.
//
// A HalfOpen breaker is due again one cooldown after its probe started: the
// probe's worker died without reporting, and without a new probe the
// endpoint would stay half open, and unclaimed, forever.
func (p Policy) ProbeDue(h Health, now time.Time) bool {
	h = p.normalize(h)
	if h.Paused || h.State == Closed {
		return false
	}
	return !now.Before(h.OpenedAt.Add(h.Cooldown))
}

// NextProbeAt is when an Open breaker will be probed, for "open, next probe
// in 3m" badges. It is zero when no automatic probe is scheduled: Closed,
// HalfOpen (a probe is in flight) or Paused.
func (p Policy) NextProbeAt(h Health) time.Time {
	h = p.normalize(h)
	if h.State != Open || h.Paused {
		return time.Time{}
	}
	return h.OpenedAt.Add(h.Cooldown)
}

// StartProbe moves a breaker whose probe is due to HalfOpen, records now as
// the probe's start in OpenedAt, and reports true: the caller sends exactly
// one probe delivery. Otherwise h is returned unchanged with false.
//
// Writing the result with a conditional UPDATE (on the state and OpenedAt
// read) lets exactly one replica win the probe.
func (p Policy) StartProbe(h Health, now time.Time) (Health, bool) {
	if !p.ProbeDue(h, now) {
		return h, false
	}
	h = p.normalize(h)
	h.State = HalfOpen
	h.OpenedAt = now
	return h, true
}

// Pause is the operator's "pause": the breaker is forced Open and no probe
// is sent until Resume or ForceClose. Pausing an already paused breaker
// keeps its OpenedAt, so the dashboard's "paused since" stays true.
func (p Policy) Pause(h Health, now time.Time) Health {
	h = p.normalize(h)
	if h.Paused {
		return h
	}
	h.State = Open
	h.Paused = true
	h.OpenedAt = now
	return h
}

// Resume lifts an operator's pause: the breaker closes with no failures and
// the base cooldown, as an operator resumes after fixing the cause. It does
// nothing to a breaker that is not paused, so a second operator's stale
// click cannot close a breaker that opened on its own since; that is what
// ForceClose is for. now is unused; it keeps every transition's signature
// alike.
func (p Policy) Resume(h Health, now time.Time) Health {
	h = p.normalize(h)
	if !h.Paused {
		return h
	}
	return p.closed(h)
}

// ForceClose is the operator's "force close": whatever the state, the
// breaker closes, unpaused, with no failures and the base cooldown. now is
// unused; it keeps every transition's signature alike.
func (p Policy) ForceClose(h Health, now time.Time) Health {
	return p.closed(p.normalize(h))
}

// closed resets h to a fresh Closed breaker, keeping its history timestamps.
func (p Policy) closed(h Health) Health {
	h.State = Closed
	h.Paused = false
	h.ConsecutiveFailures = 0
	h.OpenedAt = time.Time{}
	h.Cooldown = p.BaseCooldown
	return h
}

// normalize makes a stored row safe to reason about: an unknown state is
// Closed, a paused breaker is Open, the failure count is not negative, and
// the cooldown lies within
// [BaseCooldown, MaxCooldown] so a zero or out-of-policy value (a policy
// change since the row was written) can neither probe instantly nor wait
// past the maximum.
func (p Policy) normalize(h Health) Health {
	if !h.State.Valid() {
		h.State = Closed
	}
	if h.Paused {
		h.State = Open
	}
	h.ConsecutiveFailures = max(h.ConsecutiveFailures, 0)
	h.Cooldown = min(max(h.Cooldown, p.BaseCooldown), p.MaxCooldown)
	return h
}

// later returns the later of two times. Replicas complete batches out of
// order, so a stale report must not move a "last seen" timestamp back.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
