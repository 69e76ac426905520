// Package backoff owns hookline's retry timing: how long a failed delivery
// waits before its next attempt, how a partner's Retry-After stretches that
// wait, and the worst-case retry window shown on the endpoint form.
//
// Delays use AWS "full jitter": after the n-th failed attempt the wait is
// drawn uniformly from [0, min(Cap, Base·2^(n-1))). Full jitter spreads the
// retries of a recovering endpoint over the whole window instead of firing
// them together, which is what keeps a partner that just came back from
// being knocked over again by hookline's own backlog.
//
// The package is pure: the random source is injected and nothing here reads
// the clock, the database or the worker loop.
package backoff

import (
	"fmt"
	"math"
	"time"
)

// Source is the random source behind the jitter; *math/rand/v2.Rand
// satisfies it. Float64 must return a value in [0, 1).
//
// It is injected rather than taken from a package-level generator so tests
// can pin the jitter and so each worker goroutine can own its generator.
type Source interface {
	Float64() float64
}

// RetryAfterCap bounds how far a partner's Retry-After may push an attempt.
// A misconfigured or hostile partner answering "Retry-After: 86400" must not
// be able to park deliveries for a day; an hour is also the breaker's
// longest cooldown, so no single signal silences an endpoint for longer.
const RetryAfterCap = time.Hour

// Defaults from DESIGN §5.
const (
	DefaultBase  = 30 * time.Second
	DefaultCap   = time.Hour
	DefaultFloor = time.Second
)

// maxDuration saturates sums that would otherwise wrap around.
const maxDuration = time.Duration(math.MaxInt64)

// Policy is a validated backoff configuration. Build it with New or Default;
// a hand-made Policy that New would reject gives unspecified delays.
type Policy struct {
	// Base is the ceiling of the first gap; each later gap doubles it.
	Base time.Duration
	// Cap bounds every gap's ceiling, however many attempts failed.
	Cap time.Duration
	// Floor is the shortest wait. Full jitter can draw values close to
	// zero; retrying a failed partner within microseconds only adds load
	// and burns an attempt on the same fault.
	Floor time.Duration
}

// New validates and returns a Policy.
func New(base, cap, floor time.Duration) (Policy, error) {
	switch {
	case base <= 0:
		return Policy{}, fmt.Errorf("backoff base must be positive, got %s", base)
	case cap < base:
		return Policy{}, fmt.Errorf("backoff cap %s is below base %s", cap, base)
	case floor < 0:
		return Policy{}, fmt.Errorf("backoff floor must not be negative, got %s", floor)
	case floor > cap:
		return Policy{}, fmt.Errorf("backoff floor %s is above cap %s", floor, cap)
	}
	return Policy{Base: base, Cap: cap, Floor: floor}, nil
}

// Default returns the policy of DESIGN §5: base 30 s, cap 1 h, floor 1 s.
func Default() Policy {
	return Policy{Base: DefaultBase, Cap: DefaultCap, Floor: DefaultFloor}
}

// ceiling is the upper bound of the n-th gap, min(Cap, Base·2^(n-1)),
// computed without overflow: once the doubling would pass Cap (or the
// int64 range) the answer is Cap, so n = 1000 costs nothing and cannot wrap.
func (p Policy) ceiling(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	shift := n - 1
	// Cap >> shift is the largest Base that doubles shift times without
	// exceeding Cap; shifts of 63 or more leave no room at all.
	if shift >= 63 || p.Base > p.Cap>>shift {
		return p.Cap
	}
	return p.Base << shift
}

// gapCap is the longest possible n-th gap: the ceiling, but never under Floor.
func (p Policy) gapCap(n int) time.Duration {
	return max(p.ceiling(n), p.Floor)
}

// Delay returns the wait after the n-th failed attempt (n >= 1; smaller n
// counts as 1): a uniform draw from [0, min(Cap, Base·2^(n-1))), raised to
// Floor.
func (p Policy) Delay(n int, r Source) time.Duration {
	c := p.ceiling(n)
	u := r.Float64()
	// A Source outside its contract must not produce a negative or
	// over-cap delay: clamp it into [0, 1).
	if !(u > 0) { // also catches NaN
		u = 0
	}
	d := c - 1
	// float64(c) rounds above c for caps near the int64 limit; converting
	// such a product back would overflow, so keep the draw strictly inside
	// the window instead.
	if f := u * float64(c); f < float64(c) {
		d = min(time.Duration(f), c-1)
	}
	return max(d, p.Floor)
}

// Next is the wait after the n-th failed attempt when the partner may have
// sent Retry-After (retryAfter <= 0 means it did not). The partner asked for
// at least that long, so the result is max(Delay, retryAfter), with
// retryAfter first capped at RetryAfterCap.
//
// The jittered delay is still drawn when Retry-After is present: a partner
// that answers every client "Retry-After: 60" would otherwise see all of
// hookline's retries arrive in the same second.
func (p Policy) Next(n int, retryAfter time.Duration, r Source) time.Duration {
	d := p.Delay(n, r)
	if retryAfter <= 0 {
		return d
	}
	return max(d, min(retryAfter, RetryAfterCap))
}

// WorstCase is the longest a delivery can spend waiting between attempts
// before it is dead after maxAttempts attempts: the sum of the gap caps for
// gaps 1..maxAttempts-1 (each min(Cap, Base·2^(n-1)), at least Floor). One
// attempt has no gap, so WorstCase(1) is 0.
//
// It excludes the attempts' own durations (up to the endpoint's timeout
// each), waits stretched by Retry-After, and time spent behind an open
// circuit breaker, where due deliveries are not claimed and no attempts are
// used. The result saturates at the largest time.Duration.
func (p Policy) WorstCase(maxAttempts int) time.Duration {
	gaps := maxAttempts - 1
	var total time.Duration
	for n := 1; n <= gaps; n++ {
		g := p.gapCap(n)
		if p.ceiling(n) == p.Cap {
			// Every later gap is capped too: multiply instead of looping,
			// so a huge maxAttempts costs nothing.
			return addSat(total, mulSat(g, gaps-n+1))
		}
		total = addSat(total, g)
	}
	return total
}

// addSat adds two non-negative durations, saturating at maxDuration.
func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

// mulSat multiplies a non-negative duration by k >= 0, saturating at maxDuration.
func mulSat(d time.Duration, k int) time.Duration {
	if k <= 0 || d == 0 {
		return 0
	}
	if d > maxDuration/time.Duration(k) {
		return maxDuration
	}
	return d * time.Duration(k)
}

// Summary says the schedule in a few words for people ("30 s doubling, up
// to 1 h"), so that forms and docs derive it rather than repeat it.
func (p Policy) Summary() string {
	return roundWords(p.Base) + " doubling, up to " + roundWords(p.Cap)
}

// roundWords writes a duration in its largest whole unit (1 h, 5 min,
// 30 s), or as time.Duration does when none fits.
func roundWords(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}
