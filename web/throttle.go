package web

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// loginThrottle slows password guessing: failed logins spend tokens from a
// bucket per account and one per client IP; an empty bucket refuses further
// attempts until it refills. Successful logins spend nothing. The buckets
// live in this process (each replica throttles on its own, which still
// bounds guessing to replicas × rate).
type loginThrottle struct {
	mu      sync.Mutex
	account map[string]*rate.Limiter
	ip      map[string]*rate.Limiter
	swept   time.Time
}

// Per account: 5 failures at once, then one per minute. Per IP: 20, then
// one every 15 s (offices share addresses).
var (
	accountLimit = throttleLimit{burst: 5, every: time.Minute}
	ipLimit      = throttleLimit{burst: 20, every: 15 * time.Second}
)

type throttleLimit struct {
	burst int
	every time.Duration
}

func newLoginThrottle() *loginThrottle {
	return &loginThrottle{account: map[string]*rate.Limiter{}, ip: map[string]*rate.Limiter{}}
}

func (t *loginThrottle) limiter(m map[string]*rate.Limiter, key string, l throttleLimit, now time.Time) *rate.Limiter {
	lim := m[key]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		m[key] = lim
	}
	return lim
}

// allowed reports whether another attempt may be checked now, and if not,
// how long until one may.
func (t *loginThrottle) allowed(account, ip string, now time.Time) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	var wait time.Duration
	for _, x := range []struct {
		m   map[string]*rate.Limiter
		key string
		l   throttleLimit
	}{{t.account, account, accountLimit}, {t.ip, ip, ipLimit}} {
		lim := t.limiter(x.m, x.key, x.l, now)
		if lim.TokensAt(now) < 1 {
			r := lim.ReserveN(now, 1)
			wait = max(wait, r.DelayFrom(now))
			r.CancelAt(now)
		}
	}
	return wait == 0, wait
}

// failed records a failed attempt against both buckets.
func (t *loginThrottle) failed(account, ip string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limiter(t.account, account, accountLimit, now).AllowN(now, 1)
	t.limiter(t.ip, ip, ipLimit, now).AllowN(now, 1)
}

// sweep drops full buckets now and then, so the maps do not grow with every
// address that ever tried.
func (t *loginThrottle) sweep(now time.Time) {
	if now.Sub(t.swept) < 10*time.Minute {
		return
	}
	t.swept = now
	for _, m := range []map[string]*rate.Limiter{t.account, t.ip} {
		for k, lim := range m {
			if lim.TokensAt(now) >= float64(lim.Burst()) {
				delete(m, k)
			}
		}
	}
}
