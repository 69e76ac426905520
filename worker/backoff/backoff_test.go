package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// fixed is a Source that always draws the same value, so a test can pin a
// delay to an exact point of the jitter window.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

// justBelowOne is the largest float64 under 1, the top of Float64's range.
var justBelowOne = math.Nextafter(1, 0)

func TestNew(t *testing.T) {
	tests := []struct {
		name             string
		base, cap, floor time.Duration
		wantErr          bool
	}{
		{name: "defaults are valid", base: 30 * time.Second, cap: time.Hour, floor: time.Second},
		{name: "cap equal to base is valid", base: time.Minute, cap: time.Minute, floor: 0},
		{name: "floor equal to cap is valid", base: time.Second, cap: time.Minute, floor: time.Minute},
		{name: "zero floor is valid", base: time.Second, cap: time.Minute, floor: 0},
		{name: "zero base is rejected", base: 0, cap: time.Minute, floor: 0, wantErr: true},
		{name: "negative base is rejected", base: -time.Second, cap: time.Minute, floor: 0, wantErr: true},
		{name: "cap below base is rejected", base: time.Minute, cap: time.Second, floor: 0, wantErr: true},
		{name: "negative floor is rejected", base: time.Second, cap: time.Minute, floor: -1, wantErr: true},
		{name: "floor above cap is rejected", base: time.Second, cap: time.Minute, floor: time.Hour, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.base, tt.cap, tt.floor)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New(%s, %s, %s) = %+v, want an error", tt.base, tt.cap, tt.floor, p)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%s, %s, %s): %v", tt.base, tt.cap, tt.floor, err)
			}
			want := Policy{Base: tt.base, Cap: tt.cap, Floor: tt.floor}
			if p != want {
				t.Fatalf("New = %+v, want %+v", p, want)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	want, err := New(30*time.Second, 3600*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := Default(); got != want {
		t.Fatalf("Default() = %+v, want %+v", got, want)
	}
}

func TestDelay(t *testing.T) {
	p := Default()
	tests := []struct {
		name string
		n    int
		u    float64
		want time.Duration
	}{
		{name: "first gap draws from zero to base", n: 1, u: 0.5, want: 15 * time.Second},
		{name: "zero draw is raised to the floor", n: 1, u: 0, want: time.Second},
		{name: "small draw is raised to the floor", n: 1, u: 0.01, want: time.Second},
		{name: "draw just above the floor is kept", n: 1, u: 0.05, want: 1500 * time.Millisecond},
		{name: "second gap doubles", n: 2, u: 0.5, want: 30 * time.Second},
		{name: "third gap doubles again", n: 3, u: 0.5, want: 60 * time.Second},
		{name: "fourth gap doubles again", n: 4, u: 0.5, want: 120 * time.Second},
		{name: "seventh gap is still under the cap", n: 7, u: 0.5, want: 960 * time.Second},
		{name: "eighth gap is capped", n: 8, u: 0.5, want: 1800 * time.Second},
		{name: "attempt below one counts as the first", n: 0, u: 0.5, want: 15 * time.Second},
		{name: "negative attempt counts as the first", n: -3, u: 0.5, want: 15 * time.Second},
		{name: "shift of 62 does not overflow", n: 63, u: 0.5, want: 1800 * time.Second},
		{name: "shift of 63 does not overflow", n: 64, u: 0.5, want: 1800 * time.Second},
		{name: "attempt 1000 does not overflow", n: 1000, u: 0.5, want: 1800 * time.Second},
		{name: "source above one stays below the cap", n: 1000, u: 1.5, want: time.Hour - 1},
		{name: "negative source is raised to the floor", n: 1, u: -0.5, want: time.Second},
		{name: "NaN source is raised to the floor", n: 1, u: math.NaN(), want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Delay(tt.n, fixed(tt.u)); got != tt.want {
				t.Fatalf("Delay(%d, %v) = %s, want %s", tt.n, tt.u, got, tt.want)
			}
		})
	}
}

// TestDelayBounds checks the full-jitter window of every attempt: at least
// Floor and strictly below min(Cap, Base·2^(n-1)), at the window's edges and
// for a seeded generator.
func TestDelayBounds(t *testing.T) {
	p := Default()
	ceilings := []time.Duration{
		30 * time.Second, 60 * time.Second, 120 * time.Second, 240 * time.Second,
		480 * time.Second, 960 * time.Second, 1920 * time.Second, time.Hour, time.Hour, time.Hour,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, ceiling := range ceilings {
		n := i + 1
		t.Run(fmt.Sprintf("attempt %d", n), func(t *testing.T) {
			if got := p.Delay(n, fixed(justBelowOne)); got >= ceiling || got < ceiling-time.Microsecond {
				t.Errorf("top of window: Delay(%d) = %s, want just below %s", n, got, ceiling)
			}
			if got := p.Delay(n, fixed(0)); got != p.Floor {
				t.Errorf("bottom of window: Delay(%d) = %s, want floor %s", n, got, p.Floor)
			}
			for range 1000 {
				if got := p.Delay(n, rng); got < p.Floor || got >= ceiling {
					t.Fatalf("Delay(%d) = %s, want in [%s, %s)", n, got, p.Floor, ceiling)
				}
			}
		})
	}
}

func TestDelayHugeCap(t *testing.T) {
	p, err := New(time.Nanosecond, maxDuration, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{62, 63, 64, 1000} {
		if got := p.Delay(n, fixed(justBelowOne)); got <= 0 || got >= maxDuration {
			t.Fatalf("Delay(%d) = %s, want in (0, max duration)", n, got)
		}
	}
}

func TestNext(t *testing.T) {
	p := Default()
	tests := []struct {
		name       string
		policy     Policy
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{name: "no retry-after is the plain delay", policy: p, n: 1, retryAfter: 0, want: 15 * time.Second},
		{name: "negative retry-after is ignored", policy: p, n: 1, retryAfter: -time.Minute, want: 15 * time.Second},
		{name: "longer retry-after wins", policy: p, n: 1, retryAfter: 2 * time.Minute, want: 2 * time.Minute},
		{name: "longer delay wins", policy: p, n: 4, retryAfter: 10 * time.Second, want: 120 * time.Second},
		{name: "retry-after is capped at an hour", policy: p, n: 1, retryAfter: 24 * time.Hour, want: RetryAfterCap},
		{
			name:       "delay beyond the retry-after cap is kept",
			policy:     Policy{Base: 4 * time.Hour, Cap: 4 * time.Hour, Floor: time.Second},
			n:          1,
			retryAfter: 3 * time.Hour,
			want:       2 * time.Hour,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Next(tt.n, tt.retryAfter, fixed(0.5)); got != tt.want {
				t.Fatalf("Next(%d, %s) = %s, want %s", tt.n, tt.retryAfter, got, tt.want)
			}
		})
	}
}

func TestWorstCase(t *testing.T) {
	p := Default()
	s := time.Second
	tests := []struct {
		name        string
		policy      Policy
		maxAttempts int
		want        time.Duration
	}{
		{name: "zero attempts has no window", policy: p, maxAttempts: 0, want: 0},
		{name: "one attempt has no gap", policy: p, maxAttempts: 1, want: 0},
		{name: "two attempts wait one base", policy: p, maxAttempts: 2, want: 30 * s},
		{name: "three attempts", policy: p, maxAttempts: 3, want: (30 + 60) * s},
		{name: "four attempts", policy: p, maxAttempts: 4, want: (30 + 60 + 120) * s},
		{name: "five attempts is seven and a half minutes", policy: p, maxAttempts: 5, want: 7*time.Minute + 30*s},
		{name: "six attempts", policy: p, maxAttempts: 6, want: (450 + 480) * s},
		{name: "seven attempts", policy: p, maxAttempts: 7, want: (930 + 960) * s},
		{name: "eight attempts", policy: p, maxAttempts: 8, want: (1890 + 1920) * s},
		{name: "nine attempts reach the cap", policy: p, maxAttempts: 9, want: (3810 + 3600) * s},
		{name: "ten attempts stay at the cap", policy: p, maxAttempts: 10, want: (7410 + 3600) * s},
		{name: "fifty attempts", policy: p, maxAttempts: 50, want: (3810 + 42*3600) * s},
		{
			name:        "tiny gaps are raised to the floor",
			policy:      Policy{Base: time.Millisecond, Cap: time.Hour, Floor: time.Second},
			maxAttempts: 4,
			want:        3 * s,
		},
		{name: "a million attempts are computed without looping", policy: p, maxAttempts: 1_000_000, want: (3810 + 999_992*3600) * s},
		{name: "huge attempt counts saturate", policy: p, maxAttempts: math.MaxInt, want: maxDuration},
		{
			name:        "huge caps saturate",
			policy:      Policy{Base: maxDuration / 2, Cap: maxDuration / 2},
			maxAttempts: 4,
			want:        maxDuration,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.WorstCase(tt.maxAttempts); got != tt.want {
				t.Fatalf("WorstCase(%d) = %s, want %s", tt.maxAttempts, got, tt.want)
			}
		})
	}
}

// TestWorstCaseBoundsDelays ties WorstCase to Delay: drawing the top of every
// window must land within the advertised worst case.
func TestWorstCaseBoundsDelays(t *testing.T) {
	p := Default()
	for maxAttempts := 1; maxAttempts <= 10; maxAttempts++ {
		var total time.Duration
		for n := 1; n < maxAttempts; n++ {
			total += p.Delay(n, fixed(justBelowOne))
		}
		if wc := p.WorstCase(maxAttempts); total > wc || wc-total > time.Millisecond {
			t.Fatalf("max attempts %d: largest delays sum to %s, WorstCase = %s", maxAttempts, total, wc)
		}
	}
}

func TestSummary(t *testing.T) {
	if got := Default().Summary(); got != "30 s doubling, up to 1 h" {
		t.Errorf("default: %q", got)
	}
	p, err := New(90*time.Second, 2*time.Hour, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Summary(); got != "90 s doubling, up to 2 h" {
		t.Errorf("custom: %q", got)
	}
	if got := roundWords(1500 * time.Millisecond); got != "1.5s" {
		t.Errorf("fraction: %q", got)
	}
	if got := roundWords(5 * time.Minute); got != "5 min" {
		t.Errorf("minutes: %q", got)
	}
}
