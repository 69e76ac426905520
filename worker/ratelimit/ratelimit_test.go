package ratelimit

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// t0 is the fixed clock of every test: buckets take the time explicitly, so
// refills are checked at exact instants instead of by sleeping.
var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

// wantAvail fails the test unless endpoint id may start want sends at now.
func wantAvail(t *testing.T, r *Registry, id int64, now time.Time, want int) {
	t.Helper()
	got, ok := r.Available(id, now)
	if !ok || got != want {
		t.Fatalf("Available(%d, t0+%s) = %d, %t; want %d, true", id, now.Sub(t0), got, ok, want)
	}
}

// wantUncapped fails the test unless endpoint id is neither limited nor paused.
func wantUncapped(t *testing.T, r *Registry, id int64, now time.Time) {
	t.Helper()
	if got, ok := r.Available(id, now); ok || got != 0 {
		t.Fatalf("Available(%d, t0+%s) = %d, %t; want 0, false", id, now.Sub(t0), got, ok)
	}
}

func TestLimitUnlimited(t *testing.T) {
	tests := []struct {
		name string
		l    Limit
		want bool
	}{
		{name: "positive rate is limited", l: Limit{PerSecond: 0.5, Burst: 1}, want: false},
		{name: "zero rate is unlimited", l: Limit{Burst: 5}, want: true},
		{name: "negative rate is unlimited", l: Limit{PerSecond: -1, Burst: 5}, want: true},
		{name: "NaN rate is unlimited", l: Limit{PerSecond: math.NaN(), Burst: 5}, want: true},
		{name: "infinite rate is unlimited", l: Limit{PerSecond: math.Inf(1), Burst: 5}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.Unlimited(); got != tt.want {
				t.Fatalf("%+v.Unlimited() = %t, want %t", tt.l, got, tt.want)
			}
		})
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		name      string
		l         Limit
		replicas  int
		wantRate  rate.Limit
		wantBurst int
	}{
		{name: "one replica takes the whole limit", l: Limit{PerSecond: 10, Burst: 20}, replicas: 1, wantRate: 10, wantBurst: 20},
		{name: "two replicas halve rate and burst", l: Limit{PerSecond: 10, Burst: 20}, replicas: 2, wantRate: 5, wantBurst: 10},
		{name: "three replicas round the burst down", l: Limit{PerSecond: 9, Burst: 10}, replicas: 3, wantRate: 3, wantBurst: 3},
		{name: "burst below the replicas is at least one", l: Limit{PerSecond: 1, Burst: 2}, replicas: 3, wantRate: 1.0 / 3, wantBurst: 1},
		{name: "missing burst defaults to the rate rounded up", l: Limit{PerSecond: 2.5}, replicas: 1, wantRate: 2.5, wantBurst: 3},
		{name: "missing burst of a slow rate is one", l: Limit{PerSecond: 0.1}, replicas: 1, wantRate: 0.1, wantBurst: 1},
		{name: "missing burst of an absurd rate is bounded", l: Limit{PerSecond: 1e300}, replicas: 1, wantRate: 1e300, wantBurst: math.MaxInt32},
		{name: "tiny shares stay positive", l: Limit{PerSecond: 1e-300, Burst: 1}, replicas: 1000, wantRate: minRate, wantBurst: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotRate, gotBurst := share(tt.l, tt.replicas)
			if math.Abs(float64(gotRate-tt.wantRate)) > 1e-12 || gotBurst != tt.wantBurst {
				t.Fatalf("share(%+v, %d) = %v, %d; want %v, %d", tt.l, tt.replicas, gotRate, gotBurst, tt.wantRate, tt.wantBurst)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, r *Registry)
	}{
		{"unknown endpoint is not capped", func(t *testing.T, r *Registry) {
			wantUncapped(t, r, 1, t0)
		}},
		{"new endpoint starts with its full burst", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 5}, 1, t0)
			wantAvail(t, r, 1, t0, 5)
		}},
		{"burst is the most an idle endpoint may start", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 5}, 1, t0)
			wantAvail(t, r, 1, at(time.Hour), 5)
		}},
		{"bucket refills at the rate", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 2, Burst: 4}, 1, t0)
			r.Take(1, 4, t0)
			wantAvail(t, r, 1, t0, 0)
			wantAvail(t, r, 1, at(499*ms), 0)
			wantAvail(t, r, 1, at(500*ms), 1)
			wantAvail(t, r, 1, at(time.Second), 2)
			wantAvail(t, r, 1, at(10*time.Second), 4)
		}},
		{"two replicas split rate and burst", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 10}, 2, t0)
			wantAvail(t, r, 1, t0, 5)
			r.Take(1, 5, t0)
			wantAvail(t, r, 1, at(199*ms), 0)
			wantAvail(t, r, 1, at(200*ms), 1)
			wantAvail(t, r, 1, at(time.Second), 5)
		}},
		{"three replicas split rate and burst", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 3, Burst: 10}, 3, t0)
			wantAvail(t, r, 1, t0, 3)
			r.Take(1, 3, t0)
			wantAvail(t, r, 1, at(999*ms), 0)
			wantAvail(t, r, 1, at(time.Second), 1)
			wantAvail(t, r, 1, at(3*time.Second), 3)
		}},
		{"a third of a token per second refills on time", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 3}, 3, t0)
			wantAvail(t, r, 1, t0, 1)
			r.Take(1, 1, t0)
			wantAvail(t, r, 1, at(2999*ms), 0)
			wantAvail(t, r, 1, at(3*time.Second), 1)
		}},
		{"replicas below one count as one", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 6}, 0, t0)
			wantAvail(t, r, 1, t0, 6)
		}},
		{"set with the same values does not refill", func(t *testing.T, r *Registry) {
			l := Limit{PerSecond: 1, Burst: 5}
			r.Set(1, l, 2, t0)
			r.Take(1, 2, t0)
			r.Set(1, l, 2, at(100*ms))
			wantAvail(t, r, 1, at(100*ms), 0)
			wantAvail(t, r, 1, at(2*time.Second), 1)
		}},
		{"rate change keeps accrued tokens and refills at the new rate", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 10}, 1, t0)
			r.Take(1, 10, t0)
			r.Set(1, Limit{PerSecond: 5, Burst: 10}, 1, at(2*time.Second))
			wantAvail(t, r, 1, at(2*time.Second), 2)
			wantAvail(t, r, 1, at(3*time.Second), 7)
		}},
		{"smaller burst caps accrued tokens", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 10}, 1, t0)
			r.Set(1, Limit{PerSecond: 1, Burst: 4}, 1, at(time.Second))
			wantAvail(t, r, 1, at(time.Second), 4)
		}},
		{"larger burst does not add tokens", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 4}, 1, t0)
			r.Set(1, Limit{PerSecond: 1, Burst: 10}, 1, t0)
			wantAvail(t, r, 1, t0, 4)
			wantAvail(t, r, 1, at(6*time.Second), 10)
		}},
		{"another replica joining shrinks the share", func(t *testing.T, r *Registry) {
			l := Limit{PerSecond: 10, Burst: 10}
			r.Set(1, l, 1, t0)
			r.Set(1, l, 2, t0)
			wantAvail(t, r, 1, t0, 5)
			r.Take(1, 5, t0)
			wantAvail(t, r, 1, at(time.Second), 5)
		}},
		{"a stale time does not credit a refill twice", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 10}, 1, t0)
			r.Take(1, 10, at(10*time.Second))
			r.Set(1, Limit{PerSecond: 2, Burst: 10}, 1, at(5*time.Second))
			wantAvail(t, r, 1, at(11*time.Second), 2)
		}},
		{"take beyond available puts the bucket in debt", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.Take(1, 5, t0)
			wantAvail(t, r, 1, t0, 0)
			wantAvail(t, r, 1, at(2*time.Second), 0)
			wantAvail(t, r, 1, at(3*time.Second-ms), 0)
			wantAvail(t, r, 1, at(3*time.Second), 0)
			wantAvail(t, r, 1, at(4*time.Second), 1)
		}},
		{"take of nothing changes nothing", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.Take(1, 0, t0)
			r.Take(1, -3, t0)
			wantAvail(t, r, 1, t0, 2)
		}},
		{"take on an unlimited endpoint is ignored", func(t *testing.T, r *Registry) {
			r.Take(9, 3, t0)
			wantUncapped(t, r, 9, t0)
		}},
		{"unlimited set removes the endpoint", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.Set(1, Limit{}, 1, t0)
			wantUncapped(t, r, 1, t0)
		}},
		{"unlimited set of an unknown endpoint is a no-op", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{}, 1, t0)
			wantUncapped(t, r, 1, t0)
		}},
		{"pause holds the endpoint until its end", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 5}, 1, t0)
			r.PauseUntil(1, at(30*time.Second))
			wantAvail(t, r, 1, t0, 0)
			wantAvail(t, r, 1, at(30*time.Second-time.Nanosecond), 0)
			wantAvail(t, r, 1, at(30*time.Second), 5)
		}},
		{"pause only extends", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 10, Burst: 5}, 1, t0)
			r.PauseUntil(1, at(time.Minute))
			r.PauseUntil(1, at(10*time.Second))
			wantAvail(t, r, 1, at(30*time.Second), 0)
			wantAvail(t, r, 1, at(time.Minute), 5)
		}},
		{"pause caps an unlimited endpoint until its end", func(t *testing.T, r *Registry) {
			r.PauseUntil(7, at(10*time.Second))
			wantAvail(t, r, 7, t0, 0)
			wantUncapped(t, r, 7, at(10*time.Second))
		}},
		{"unlimited set keeps a running pause", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.PauseUntil(1, at(10*time.Second))
			r.Set(1, Limit{}, 1, at(time.Second))
			wantAvail(t, r, 1, at(time.Second), 0)
			wantUncapped(t, r, 1, at(10*time.Second))
		}},
		{"a limit set during a pause applies after it", func(t *testing.T, r *Registry) {
			r.PauseUntil(1, at(10*time.Second))
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, at(time.Second))
			wantAvail(t, r, 1, at(time.Second), 0)
			wantAvail(t, r, 1, at(10*time.Second), 2)
		}},
		{"retain drops endpoints not kept", func(t *testing.T, r *Registry) {
			r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.Set(2, Limit{PerSecond: 1, Burst: 2}, 1, t0)
			r.PauseUntil(3, at(time.Minute))
			r.Retain(map[int64]bool{2: true})
			wantUncapped(t, r, 1, t0)
			wantAvail(t, r, 2, t0, 2)
			wantUncapped(t, r, 3, t0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, NewRegistry())
		})
	}
	t.Run("zero registry is usable", func(t *testing.T) {
		var r Registry
		wantUncapped(t, &r, 1, t0)
		r.Set(1, Limit{PerSecond: 1, Burst: 2}, 1, t0)
		wantAvail(t, &r, 1, t0, 2)
		var p Registry
		p.PauseUntil(1, at(time.Second))
		wantAvail(t, &p, 1, t0, 0)
	})
}

func TestSnapshot(t *testing.T) {
	r := NewRegistry()
	r.Set(30, Limit{PerSecond: 1, Burst: 3}, 1, t0)
	r.Set(10, Limit{PerSecond: 1, Burst: 1}, 1, t0)
	r.Set(20, Limit{PerSecond: 1, Burst: 2}, 1, t0)
	r.Set(40, Limit{}, 1, t0)
	r.PauseUntil(15, at(time.Minute)) // unlimited but paused
	r.PauseUntil(25, at(time.Second)) // pause over by the snapshot
	r.Take(20, 5, t0)

	tests := []struct {
		name      string
		now       time.Time
		wantIDs   []int64
		wantAvail []int32
	}{
		{name: "sorted by id with paused and indebted endpoints at zero", now: t0, wantIDs: []int64{10, 15, 20, 25, 30}, wantAvail: []int32{1, 0, 0, 0, 3}},
		{name: "ended pauses of unlimited endpoints drop out", now: at(2 * time.Second), wantIDs: []int64{10, 15, 20, 30}, wantAvail: []int32{1, 0, 0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, avail := r.Snapshot(tt.now)
			if !slices.Equal(ids, tt.wantIDs) || !slices.Equal(avail, tt.wantAvail) {
				t.Fatalf("Snapshot = %v, %v; want %v, %v", ids, avail, tt.wantIDs, tt.wantAvail)
			}
		})
	}
	t.Run("empty registry has empty arrays", func(t *testing.T) {
		ids, avail := NewRegistry().Snapshot(t0)
		if len(ids) != 0 || len(avail) != 0 {
			t.Fatalf("Snapshot = %v, %v; want empty", ids, avail)
		}
	})
}

// TestConcurrent runs every method from several goroutines (meaningful
// under -race) and checks that concurrent takes are all booked.
func TestConcurrent(t *testing.T) {
	r := NewRegistry()
	const workers, takes = 8, 100
	r.Set(1, Limit{PerSecond: 100, Burst: 100}, 1, t0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			other := int64(100 + w)
			for i := range takes {
				r.Take(1, 1, t0)
				r.Available(1, t0)
				r.Set(other, Limit{PerSecond: float64(i%3 + 1), Burst: 4}, w%3+1, at(time.Duration(i)*ms))
				r.Take(other, 2, at(time.Duration(i)*ms))
				r.PauseUntil(other, at(time.Duration(i)*ms))
				r.Snapshot(at(time.Duration(i) * ms))
				if i%25 == 0 {
					r.Retain(map[int64]bool{1: true, other: true})
				}
			}
		})
	}
	wg.Wait()
	// 800 tokens taken from a full bucket of 100 at 100/s: 700 in debt,
	// repaid after 7 s.
	wantAvail(t, r, 1, at(7*time.Second), 0)
	wantAvail(t, r, 1, at(7*time.Second+10*ms), 1)
}
