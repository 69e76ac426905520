package web

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// loginThrottle slows password guessing. An attempt takes a token from a
// bucket per account and one per client address *before* the password is
// checked, and gives both back when the password was right: parallel
// guesses cannot all be checked before the first failure is counted, so
// no more than a bucket's worth of guesses is ever evaluated. A cap on
// concurrent evaluations keeps bcrypt from taking every core. The buckets
// live in this process (each replica throttles on its own, which still
// bounds guessing to replicas × rate).
//
// The buckets are written here rather than taken from golang.org/x/time/
// rate: a rate.Reservation can be cancelled only until its time to act,
// and a token must be given back after bcrypt has run.
type loginThrottle struct {
	mu      sync.Mutex
	account map[string]*bucket
	ip      map[string]*bucket
	swept   time.Time
	// slots bounds concurrent password evaluations.
	slots chan struct{}
	// evaluations counts the passwords (or codes) checked; tests read it.
	evaluations atomic.Int64
}

// Per account: 5 attempts at once, then one per minute. Per address: 20,
// then one every 15 s (offices share addresses). At most 4 evaluations run
// at once; a fifth waits up to evaluationWait.
var (
	accountLimit = throttleLimit{burst: 5, every: time.Minute}
	ipLimit      = throttleLimit{burst: 20, every: 15 * time.Second}
)

const (
	concurrentEvaluations = 4
	evaluationWait        = 5 * time.Second
)

type throttleLimit struct {
	burst int
	every time.Duration
}

// bucket is a token bucket: burst tokens, one more every `every`.
type bucket struct {
	tokens float64
	last   time.Time
	l      throttleLimit
}

func (b *bucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(float64(b.l.burst), b.tokens+float64(now.Sub(b.last))/float64(b.l.every))
		b.last = now
	}
}

// wait is how long until a token is there (0: now).
func (b *bucket) wait(now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(b.l.every))
}

func newLoginThrottle() *loginThrottle {
	return &loginThrottle{account: map[string]*bucket{}, ip: map[string]*bucket{}, slots: make(chan struct{}, concurrentEvaluations)}
}

func (t *loginThrottle) bucket(m map[string]*bucket, key string, l throttleLimit, now time.Time) *bucket {
	b := m[key]
	if b == nil {
		b = &bucket{tokens: float64(l.burst), last: now, l: l}
		m[key] = b
	}
	return b
}

// signInAttempt is a taken attempt: GiveBack returns its tokens.
type signInAttempt struct {
	t           *loginThrottle
	account, ip string
}

// take takes an attempt for the account and the address, or reports how
// long until one may be made. Both buckets are checked and charged under
// one lock, so parallel attempts are counted one by one.
func (t *loginThrottle) take(account, ip string, now time.Time) (*signInAttempt, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	a := t.bucket(t.account, account, accountLimit, now)
	b := t.bucket(t.ip, ip, ipLimit, now)
	if wait := max(a.wait(now), b.wait(now)); wait > 0 {
		return nil, wait
	}
	a.tokens--
	b.tokens--
	return &signInAttempt{t: t, account: account, ip: ip}, 0
}

// GiveBack returns the attempt's tokens: a right password costs nothing,
// nor does an attempt that could not be checked (the database was down).
func (a *signInAttempt) GiveBack(now time.Time) {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range []struct {
		m   map[string]*bucket
		key string
		l   throttleLimit
	}{{t.account, a.account, accountLimit}, {t.ip, a.ip, ipLimit}} {
		b := t.bucket(x.m, x.key, x.l, now)
		b.refill(now)
		b.tokens = min(float64(b.l.burst), b.tokens+1)
	}
}

// errEvaluationsBusy: every evaluation slot stayed taken for
// evaluationWait.
var errEvaluationsBusy = errors.New("sign-in evaluations busy")

// evaluate runs check (bcrypt, a TOTP code) in one of the limited slots.
func (t *loginThrottle) evaluate(ctx context.Context, check func() bool) (bool, error) {
	wait := time.NewTimer(evaluationWait)
	defer wait.Stop()
	select {
	case t.slots <- struct{}{}:
	case <-wait.C:
		return false, errEvaluationsBusy
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-t.slots }()
	t.evaluations.Add(1)
	return check(), nil
}

// sweep drops full buckets now and then, so the maps do not grow with every
// address that ever tried.
func (t *loginThrottle) sweep(now time.Time) {
	if now.Sub(t.swept) < 10*time.Minute {
		return
	}
	t.swept = now
	for _, m := range []map[string]*bucket{t.account, t.ip} {
		for k, b := range m {
			b.refill(now)
			if b.tokens >= float64(b.l.burst) {
				delete(m, k)
			}
		}
	}
}
