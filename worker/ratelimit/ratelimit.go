// Package ratelimit owns hookline's per-endpoint send rate: one token bucket
// (golang.org/x/time/rate) per rate-limited endpoint, holding this replica's
// share of the partner's limit, and the short pauses a partner asks for with
// Retry-After.
//
// The worker does not wait on the buckets. Before each claim it asks the
// Registry how many sends each capped endpoint may start now (Snapshot),
// passes those numbers to the claim query as per-endpoint caps, and then
// takes exactly as many tokens as deliveries it claimed (Take). Waiting
// would hold claimed rows, and their leases, while the bucket refills;
// capping the claim leaves excess deliveries in the queue for later.
//
// Every method takes the time explicitly, so tests drive the buckets with a
// fixed clock and the worker can use one timestamp for a whole claim cycle.
package ratelimit

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is an endpoint's configured rate, for the whole endpoint across all
// replicas (endpoints.rate_per_sec and endpoints.burst).
type Limit struct {
	// PerSecond is the sustained rate. Zero, negative, NaN or infinite
	// means unlimited.
	PerSecond float64
	// Burst is how many sends may start at once after the endpoint has
	// been idle. Below 1 it defaults to ceil(PerSecond), at least 1, so a
	// limit configured without a burst still lets a claim cycle of about
	// a second reach the rate.
	Burst int
}

// Unlimited reports whether l imposes no rate.
func (l Limit) Unlimited() bool {
	return !(l.PerSecond > 0) || math.IsInf(l.PerSecond, 1)
}

// minRate keeps a replica's share positive however many replicas split a
// tiny rate: rate.Limiter treats a zero limit as "never", which would stall
// the endpoint on this replica instead of slowing it.
const minRate = 1e-6

// maxBurst bounds a defaulted burst so an absurd rate cannot overflow int.
const maxBurst = math.MaxInt32

// tokenSlack absorbs float rounding in the refill arithmetic: after exactly
// the time one token takes to accrue, the bucket may hold 0.9999999999
// tokens, and flooring that would hold a send back a whole claim cycle.
const tokenSlack = 1e-9

// share is one replica's part of l: rate/replicas, and burst/replicas
// rounded down but at least 1. Rounding down keeps the replicas together
// within the partner's burst; the floor of 1 is the exception (burst 2 over
// 3 replicas allows 3 at once), since a replica with no burst could never
// send at all.
func share(l Limit, replicas int) (rate.Limit, int) {
	burst := l.Burst
	if burst < 1 {
		burst = int(min(max(math.Ceil(l.PerSecond), 1), maxBurst))
	}
	perRate := max(l.PerSecond/float64(replicas), minRate)
	return rate.Limit(perRate), max(burst/replicas, 1)
}

// bucket is one endpoint's state on this replica.
type bucket struct {
	// lim is nil when the endpoint is not rate-limited and only kept for
	// its pause.
	lim *rate.Limiter
	// last is the latest time any mutation used. rate.Limiter rewinds its
	// own clock when handed an earlier time and then credits the same
	// interval twice, so mutations never pass it a time before last.
	last time.Time
	// pausedUntil is the end of a Retry-After pause; zero when none.
	pausedUntil time.Time
}

// at returns now, or last if now is earlier, and records it.
func (b *bucket) at(now time.Time) time.Time {
	if now.After(b.last) {
		b.last = now
	}
	return b.last
}

// paused reports whether a Retry-After pause is still running at now.
func (b *bucket) paused(now time.Time) bool {
	return now.Before(b.pausedUntil)
}

// Registry holds this replica's buckets, keyed by endpoint id. It is safe
// for concurrent use. The zero value is ready to use; NewRegistry exists
// for symmetry with the worker's other constructors.
type Registry struct {
	mu        sync.Mutex
	endpoints map[int64]*bucket
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{endpoints: make(map[int64]*bucket)}
}

// Set configures endpoint id's limit l, of which this replica takes a
// 1/replicas share (replicas < 1 counts as 1). The worker calls it on every
// configuration refresh, so calls are cheap and idempotent:
//
//   - a new endpoint starts with a full bucket;
//   - the same share again changes nothing, in particular it does not
//     refill the bucket;
//   - a changed limit or replica count keeps the tokens already accrued
//     and refills at the new rate from now on (a smaller burst caps them);
//   - an unlimited l removes the bucket, keeping only a running pause.
func (r *Registry) Set(id int64, l Limit, replicas int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endpoints == nil {
		r.endpoints = make(map[int64]*bucket)
	}
	b := r.endpoints[id]
	if l.Unlimited() {
		if b == nil {
			return
		}
		b.lim = nil
		if !b.paused(now) {
			delete(r.endpoints, id)
		}
		return
	}
	perRate, perBurst := share(l, max(replicas, 1))
	if b == nil {
		b = &bucket{}
		r.endpoints[id] = b
	}
	if b.lim == nil {
		b.lim = rate.NewLimiter(perRate, perBurst)
		b.at(now)
		return
	}
	if b.lim.Limit() == perRate && b.lim.Burst() == perBurst {
		return
	}
	t := b.at(now)
	b.lim.SetLimitAt(t, perRate)
	b.lim.SetBurstAt(t, perBurst)
}

// Retain drops every endpoint not in keep, the ids the worker still knows
// (an endpoint deleted, disabled or no longer limited since the last
// refresh). Buckets are small, but a long-running worker must not keep one
// per endpoint that ever existed.
func (r *Registry) Retain(keep map[int64]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.endpoints {
		if !keep[id] {
			delete(r.endpoints, id)
		}
	}
}

// Available returns how many sends endpoint id may start at now: the whole
// tokens in its bucket, 0 while paused or in debt. ok is false when the
// endpoint is not capped at all (neither rate-limited nor paused), and the
// claim should not limit it.
func (r *Registry) Available(id int64, now time.Time) (n int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.available(id, now)
}

// available is Available with r.mu held.
func (r *Registry) available(id int64, now time.Time) (int, bool) {
	b := r.endpoints[id]
	switch {
	case b == nil:
		return 0, false
	case b.paused(now):
		return 0, true
	case b.lim == nil:
		// The pause that kept this unlimited endpoint here is over.
		delete(r.endpoints, id)
		return 0, false
	}
	tokens := b.lim.TokensAt(now)
	if tokens < 0 {
		return 0, true
	}
	return int(math.Floor(tokens + tokenSlack)), true
}

// Take consumes n tokens of endpoint id at now, after a claim returned n of
// its deliveries. It never blocks. Taking more than Available (the claim
// raced a configuration change, or the caller overrides the cap) puts the
// bucket in debt: Available stays 0 until the rate has repaid it, so the
// partner's average rate still holds. Endpoints that are not rate-limited
// are ignored.
func (r *Registry) Take(id int64, n int, now time.Time) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.endpoints[id]
	if b == nil || b.lim == nil {
		return
	}
	t := b.at(now)
	// A reservation larger than the burst is refused outright, so a large
	// take is booked as several reservations of at most one burst each.
	// Reservations are never cancelled: the sends they stand for have
	// been claimed and will happen.
	burst := b.lim.Burst()
	for n > 0 {
		k := min(n, burst)
		b.lim.ReserveN(t, k)
		n -= k
	}
}

// Snapshot returns every capped endpoint (rate-limited or paused) with the
// number of sends it may start at now, sorted by id, as the claim query's
// parallel arrays. Counts are int32 to match the query's integer[] and are
// clamped to its range.
func (r *Registry) Snapshot(now time.Time) (ids []int64, avail []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids = make([]int64, 0, len(r.endpoints))
	for id := range r.endpoints {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmp.Compare[int64])
	kept := ids[:0]
	avail = make([]int32, 0, len(ids))
	for _, id := range ids {
		n, ok := r.available(id, now)
		if !ok {
			continue
		}
		kept = append(kept, id)
		avail = append(avail, int32(min(n, math.MaxInt32)))
	}
	return kept, avail
}

// PauseUntil makes endpoint id unavailable until t, after a 429 or 503 with
// Retry-After: Available returns 0 before t. It applies to endpoints without
// a rate limit too, since any partner may ask hookline to back off. A pause
// only ever extends: answers to sends in flight arrive out of order, and the
// longest wait a partner asked for is the one to honour. The caller caps t
// (backoff.RetryAfterCap).
//
// The bucket keeps refilling during the pause, up to its burst, so the
// endpoint resumes at the rate its limit allows rather than trickling.
func (r *Registry) PauseUntil(id int64, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endpoints == nil {
		r.endpoints = make(map[int64]*bucket)
	}
	b := r.endpoints[id]
	if b == nil {
		b = &bucket{}
		r.endpoints[id] = b
	}
	if t.After(b.pausedUntil) {
		b.pausedUntil = t
	}
}
