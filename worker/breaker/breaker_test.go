package breaker

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// t0 is the fixed clock of every test: transitions are pure, so no test
// sleeps or reads the wall clock.
var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

const (
	base = DefaultBaseCooldown
	maxC = DefaultMaxCooldown
)

func TestStateValid(t *testing.T) {
	tests := []struct {
		state State
		want  bool
	}{
		{Closed, true},
		{Open, true},
		{HalfOpen, true},
		{"", false},
		{"half-open", false},
		{"OPEN", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.state), func(t *testing.T) {
			if got := tt.state.Valid(); got != tt.want {
				t.Fatalf("State(%q).Valid() = %t, want %t", tt.state, got, tt.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Policy)
		wantErr string
	}{
		{name: "default is valid", edit: func(*Policy) {}},
		{name: "max cooldown equal to base is valid", edit: func(p *Policy) { p.MaxCooldown = p.BaseCooldown }},
		{name: "min threshold of one is valid", edit: func(p *Policy) { p.MinThreshold = 1 }},
		{name: "zero base cooldown", edit: func(p *Policy) { p.BaseCooldown = 0 }, wantErr: "base cooldown"},
		{name: "negative base cooldown", edit: func(p *Policy) { p.BaseCooldown = -time.Second }, wantErr: "base cooldown"},
		{name: "max cooldown below base", edit: func(p *Policy) { p.MaxCooldown = time.Minute }, wantErr: "max cooldown"},
		{name: "zero min threshold", edit: func(p *Policy) { p.MinThreshold = 0 }, wantErr: "min threshold"},
		{name: "zero slow P95", edit: func(p *Policy) { p.SlowP95 = 0 }, wantErr: "slow P95"},
		{name: "zero min samples", edit: func(p *Policy) { p.MinSamples = 0 }, wantErr: "min samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			tt.edit(&p)
			err := p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error about %q", err, tt.wantErr)
			}
		})
	}
	t.Run("every invalid field is reported", func(t *testing.T) {
		err := Policy{}.Validate()
		for _, field := range []string{"base cooldown", "min threshold", "slow P95", "min samples"} {
			if err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("Policy{}.Validate() = %v, want it to mention %q", err, field)
			}
		}
	})
}

func TestDefaultPolicy(t *testing.T) {
	want := Policy{
		BaseCooldown: 300 * time.Second,
		MaxCooldown:  3600 * time.Second,
		MinThreshold: 3,
		SlowP95:      5 * time.Second,
		MinSamples:   20,
	}
	if got := DefaultPolicy(); got != want {
		t.Fatalf("DefaultPolicy() = %+v, want %+v", got, want)
	}
}

func TestEffectiveThreshold(t *testing.T) {
	p := DefaultPolicy()
	slow := 6 * time.Second
	tests := []struct {
		name       string
		configured int
		p95        time.Duration
		samples    int
		want       int
	}{
		{name: "fast endpoint keeps its threshold", configured: 10, p95: 200 * time.Millisecond, samples: 1000, want: 10},
		{name: "slow endpoint is halved", configured: 10, p95: slow, samples: 20, want: 5},
		{name: "halving rounds down", configured: 7, p95: slow, samples: 20, want: 3},
		{name: "halving stops at the minimum", configured: 5, p95: slow, samples: 20, want: 3},
		{name: "four halves to the minimum", configured: 4, p95: slow, samples: 20, want: 3},
		{name: "minimum stays at the minimum", configured: 3, p95: slow, samples: 20, want: 3},
		{name: "never above the configured threshold", configured: 2, p95: slow, samples: 20, want: 2},
		{name: "threshold of one stays one", configured: 1, p95: slow, samples: 20, want: 1},
		{name: "large threshold is halved", configured: 1000, p95: slow, samples: 20, want: 500},
		{name: "19 samples are too few", configured: 10, p95: slow, samples: 19, want: 10},
		{name: "20 samples are enough", configured: 10, p95: slow, samples: 20, want: 5},
		{name: "P95 of exactly 5s is not slow", configured: 10, p95: 5 * time.Second, samples: 100, want: 10},
		{name: "P95 just over 5s is slow", configured: 10, p95: 5*time.Second + time.Millisecond, samples: 100, want: 5},
		{name: "zero configured counts as one", configured: 0, p95: 0, samples: 0, want: 1},
		{name: "negative configured counts as one", configured: -4, p95: slow, samples: 100, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.EffectiveThreshold(tt.configured, tt.p95, tt.samples); got != tt.want {
				t.Fatalf("EffectiveThreshold(%d, %s, %d) = %d, want %d", tt.configured, tt.p95, tt.samples, got, tt.want)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	p := DefaultPolicy()
	opened := t0.Add(-time.Minute)
	now := t0
	tests := []struct {
		name      string
		h         Health
		threshold int
		want      Health
	}{
		{
			name:      "closed stays closed below the threshold",
			h:         Health{State: Closed, ConsecutiveFailures: 8, Cooldown: base},
			threshold: 10,
			want:      Health{State: Closed, ConsecutiveFailures: 9, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "closed opens exactly at the threshold",
			h:         Health{State: Closed, ConsecutiveFailures: 9, Cooldown: base},
			threshold: 10,
			want:      Health{State: Open, ConsecutiveFailures: 10, OpenedAt: now, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "closed past a lowered threshold opens",
			h:         Health{State: Closed, ConsecutiveFailures: 7, Cooldown: base},
			threshold: 5,
			want:      Health{State: Open, ConsecutiveFailures: 8, OpenedAt: now, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "opening resets a leftover cooldown to base",
			h:         Health{State: Closed, ConsecutiveFailures: 2, Cooldown: 1200 * time.Second},
			threshold: 3,
			want:      Health{State: Open, ConsecutiveFailures: 3, OpenedAt: now, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "threshold below one counts as one",
			h:         Health{State: Closed, Cooldown: base},
			threshold: 0,
			want:      Health{State: Open, ConsecutiveFailures: 1, OpenedAt: now, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "zero health is a closed breaker",
			h:         Health{},
			threshold: 10,
			want:      Health{State: Closed, ConsecutiveFailures: 1, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "failures while open only count",
			h:         Health{State: Open, ConsecutiveFailures: 10, OpenedAt: opened, Cooldown: 600 * time.Second},
			threshold: 10,
			want:      Health{State: Open, ConsecutiveFailures: 11, OpenedAt: opened, Cooldown: 600 * time.Second, LastFailureAt: now},
		},
		{
			name:      "failed probe reopens with the cooldown doubled",
			h:         Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: opened, Cooldown: base},
			threshold: 10,
			want:      Health{State: Open, ConsecutiveFailures: 11, OpenedAt: now, Cooldown: 600 * time.Second, LastFailureAt: now},
		},
		{
			name:      "failed probe cooldown stops at the maximum",
			h:         Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: opened, Cooldown: 2400 * time.Second},
			threshold: 10,
			want:      Health{State: Open, ConsecutiveFailures: 11, OpenedAt: now, Cooldown: maxC, LastFailureAt: now},
		},
		{
			name:      "failure while paused keeps it paused and open",
			h:         Health{State: Open, Paused: true, OpenedAt: opened, Cooldown: base},
			threshold: 1,
			want:      Health{State: Open, Paused: true, ConsecutiveFailures: 1, OpenedAt: opened, Cooldown: base, LastFailureAt: now},
		},
		{
			name:      "a late report does not move last failure back",
			h:         Health{State: Closed, Cooldown: base, LastFailureAt: now.Add(time.Second)},
			threshold: 10,
			want:      Health{State: Closed, ConsecutiveFailures: 1, Cooldown: base, LastFailureAt: now.Add(time.Second)},
		},
		{
			name:      "the failure count saturates at the column's range",
			h:         Health{State: Open, ConsecutiveFailures: math.MaxInt32, OpenedAt: opened, Cooldown: base},
			threshold: 10,
			want:      Health{State: Open, ConsecutiveFailures: math.MaxInt32, OpenedAt: opened, Cooldown: base, LastFailureAt: now},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Failure(tt.h, tt.threshold, now); got != tt.want {
				t.Fatalf("Failure(%+v, %d)\n got  %+v\n want %+v", tt.h, tt.threshold, got, tt.want)
			}
		})
	}
}

// TestProbeFailureDoubling walks a partner that keeps failing its probes:
// the cooldown doubles from 300 s and stays at 3600 s.
func TestProbeFailureDoubling(t *testing.T) {
	p := DefaultPolicy()
	now := t0
	h := p.Failure(Health{}, 1, now)
	want := []time.Duration{600, 1200, 2400, 3600, 3600}
	for i, w := range want {
		if !p.ProbeDue(h, h.OpenedAt.Add(h.Cooldown)) {
			t.Fatalf("step %d: probe not due after cooldown %s", i, h.Cooldown)
		}
		now = h.OpenedAt.Add(h.Cooldown)
		var ok bool
		if h, ok = p.StartProbe(h, now); !ok {
			t.Fatalf("step %d: StartProbe refused a due probe", i)
		}
		now = now.Add(10 * time.Second)
		h = p.Failure(h, 1, now)
		if h.State != Open || h.Cooldown != w*time.Second || !h.OpenedAt.Equal(now) {
			t.Fatalf("step %d: after a failed probe got %+v, want open at %s with cooldown %ds", i, h, now, w)
		}
	}
}

func TestSuccess(t *testing.T) {
	p := DefaultPolicy()
	opened := t0.Add(-time.Minute)
	now := t0
	tests := []struct {
		name string
		h    Health
		want Health
	}{
		{
			name: "closed success resets the failures",
			h:    Health{State: Closed, ConsecutiveFailures: 4, Cooldown: base, LastFailureAt: opened},
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now, LastFailureAt: opened},
		},
		{
			name: "probe success closes and resets the cooldown",
			h:    Health{State: HalfOpen, ConsecutiveFailures: 12, OpenedAt: opened, Cooldown: 2400 * time.Second},
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now},
		},
		{
			name: "success of an in-flight send closes an open breaker",
			h:    Health{State: Open, ConsecutiveFailures: 10, OpenedAt: opened, Cooldown: 600 * time.Second},
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now},
		},
		{
			name: "success does not lift a pause",
			h:    Health{State: Open, Paused: true, ConsecutiveFailures: 3, OpenedAt: opened, Cooldown: 600 * time.Second},
			want: Health{State: Open, Paused: true, OpenedAt: opened, Cooldown: base, LastSuccessAt: now},
		},
		{
			name: "zero health becomes a closed breaker",
			h:    Health{},
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now},
		},
		{
			name: "a late report does not move last success back",
			h:    Health{State: Closed, Cooldown: base, LastSuccessAt: now.Add(time.Second)},
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now.Add(time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Success(tt.h, now); got != tt.want {
				t.Fatalf("Success(%+v)\n got  %+v\n want %+v", tt.h, got, tt.want)
			}
		})
	}
}

// TestRecord: one attempt's result, probe or not, in every state.
func TestRecord(t *testing.T) {
	p := DefaultPolicy()
	opened := t0.Add(-time.Minute)
	earlier := t0.Add(-time.Hour)
	now := t0
	halfOpen := Health{State: HalfOpen, ConsecutiveFailures: 12, OpenedAt: opened, Cooldown: 600 * time.Second, LastFailureAt: earlier}
	tests := []struct {
		name      string
		h         Health
		ok, probe bool
		want      Health
	}{
		{
			name: "closed success",
			h:    Health{State: Closed, ConsecutiveFailures: 2, Cooldown: base},
			ok:   true,
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now},
		},
		{
			name: "closed failure at the threshold opens",
			h:    Health{State: Closed, ConsecutiveFailures: 2, Cooldown: base},
			want: Health{State: Open, ConsecutiveFailures: 3, OpenedAt: now, Cooldown: base, LastFailureAt: now},
		},
		{
			name:  "failed probe reopens with the cooldown doubled",
			h:     halfOpen,
			probe: true,
			want:  Health{State: Open, ConsecutiveFailures: 13, OpenedAt: now, Cooldown: 1200 * time.Second, LastFailureAt: now},
		},
		{
			name: "a late failure while half open is only noted",
			h:    halfOpen,
			want: Health{State: HalfOpen, ConsecutiveFailures: 12, OpenedAt: opened, Cooldown: 600 * time.Second, LastFailureAt: now},
		},
		{
			name: "a late success while half open closes",
			h:    halfOpen,
			ok:   true,
			want: Health{State: Closed, Cooldown: base, LastSuccessAt: now, LastFailureAt: earlier},
		},
		{
			name:  "successful probe closes",
			h:     halfOpen,
			ok:    true,
			probe: true,
			want:  Health{State: Closed, Cooldown: base, LastSuccessAt: now, LastFailureAt: earlier},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Record(tt.h, 3, tt.ok, tt.probe, now); got != tt.want {
				t.Fatalf("Record(%+v, ok=%t, probe=%t)\n got  %+v\n want %+v", tt.h, tt.ok, tt.probe, got, tt.want)
			}
		})
	}
}

func TestProbeDue(t *testing.T) {
	p := DefaultPolicy()
	open := Health{State: Open, ConsecutiveFailures: 10, OpenedAt: t0, Cooldown: base}
	probing := Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: t0, Cooldown: base}
	tests := []struct {
		name        string
		h           Health
		now         time.Time
		wantDue     bool
		wantProbeAt time.Time
	}{
		{name: "closed is never due", h: Health{State: Closed, Cooldown: base}, now: t0.Add(24 * time.Hour)},
		{name: "open is not due before the cooldown", h: open, now: t0.Add(base - time.Nanosecond), wantProbeAt: t0.Add(base)},
		{name: "open is due at the cooldown", h: open, now: t0.Add(base), wantDue: true, wantProbeAt: t0.Add(base)},
		{name: "open is due after the cooldown", h: open, now: t0.Add(time.Hour), wantDue: true, wantProbeAt: t0.Add(base)},
		{
			name:        "a doubled cooldown is honoured",
			h:           Health{State: Open, OpenedAt: t0, Cooldown: 1200 * time.Second},
			now:         t0.Add(600 * time.Second),
			wantProbeAt: t0.Add(1200 * time.Second),
		},
		{
			name:        "a zero stored cooldown counts as base",
			h:           Health{State: Open, OpenedAt: t0},
			now:         t0.Add(time.Second),
			wantProbeAt: t0.Add(base),
		},
		{
			name:        "a stored cooldown past the maximum is capped",
			h:           Health{State: Open, OpenedAt: t0, Cooldown: 10 * time.Hour},
			now:         t0.Add(maxC),
			wantDue:     true,
			wantProbeAt: t0.Add(maxC),
		},
		{name: "paused is never due", h: Health{State: Open, Paused: true, OpenedAt: t0, Cooldown: base}, now: t0.Add(24 * time.Hour)},
		{name: "half open with a probe in flight is not due", h: probing, now: t0.Add(base - time.Nanosecond)},
		{name: "half open with a lost probe is due again", h: probing, now: t0.Add(base), wantDue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.ProbeDue(tt.h, tt.now); got != tt.wantDue {
				t.Errorf("ProbeDue(%+v, %s) = %t, want %t", tt.h, tt.now, got, tt.wantDue)
			}
			if got := p.NextProbeAt(tt.h); !got.Equal(tt.wantProbeAt) {
				t.Errorf("NextProbeAt(%+v) = %s, want %s", tt.h, got, tt.wantProbeAt)
			}
		})
	}
}

func TestStartProbe(t *testing.T) {
	p := DefaultPolicy()
	open := Health{State: Open, ConsecutiveFailures: 10, OpenedAt: t0, Cooldown: base, LastFailureAt: t0}
	tests := []struct {
		name   string
		h      Health
		now    time.Time
		want   Health
		wantOK bool
	}{
		{name: "not due leaves it open", h: open, now: t0.Add(time.Minute), want: open},
		{
			name:   "due moves it to half open",
			h:      open,
			now:    t0.Add(base),
			want:   Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: t0.Add(base), Cooldown: base, LastFailureAt: t0},
			wantOK: true,
		},
		{
			name:   "a late worker starts the probe at its own time",
			h:      open,
			now:    t0.Add(2 * time.Hour),
			want:   Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: t0.Add(2 * time.Hour), Cooldown: base, LastFailureAt: t0},
			wantOK: true,
		},
		{
			name: "a second worker does not start another probe",
			h:    Health{State: HalfOpen, OpenedAt: t0.Add(base), Cooldown: base},
			now:  t0.Add(base + time.Second),
			want: Health{State: HalfOpen, OpenedAt: t0.Add(base), Cooldown: base},
		},
		{
			name:   "a lost probe is replaced",
			h:      Health{State: HalfOpen, OpenedAt: t0, Cooldown: base},
			now:    t0.Add(base),
			want:   Health{State: HalfOpen, OpenedAt: t0.Add(base), Cooldown: base},
			wantOK: true,
		},
		{
			name: "paused is not probed",
			h:    Health{State: Open, Paused: true, OpenedAt: t0, Cooldown: base},
			now:  t0.Add(24 * time.Hour),
			want: Health{State: Open, Paused: true, OpenedAt: t0, Cooldown: base},
		},
		{name: "closed is not probed", h: Health{State: Closed}, now: t0, want: Health{State: Closed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.StartProbe(tt.h, tt.now)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("StartProbe(%+v, %s)\n got  %+v, %t\n want %+v, %t", tt.h, tt.now, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestOperatorActions(t *testing.T) {
	p := DefaultPolicy()
	now := t0
	earlier := t0.Add(-time.Hour)
	tests := []struct {
		name   string
		action func(Health, time.Time) Health
		h      Health
		want   Health
	}{
		{
			name:   "pause opens a closed breaker",
			action: p.Pause,
			h:      Health{State: Closed, ConsecutiveFailures: 2, Cooldown: base},
			want:   Health{State: Open, Paused: true, ConsecutiveFailures: 2, OpenedAt: now, Cooldown: base},
		},
		{
			name:   "pause keeps an open breaker's cooldown",
			action: p.Pause,
			h:      Health{State: Open, ConsecutiveFailures: 12, OpenedAt: earlier, Cooldown: 1200 * time.Second},
			want:   Health{State: Open, Paused: true, ConsecutiveFailures: 12, OpenedAt: now, Cooldown: 1200 * time.Second},
		},
		{
			name:   "pause during a probe opens the breaker",
			action: p.Pause,
			h:      Health{State: HalfOpen, OpenedAt: earlier, Cooldown: base},
			want:   Health{State: Open, Paused: true, OpenedAt: now, Cooldown: base},
		},
		{
			name:   "pausing twice keeps the first pause time",
			action: p.Pause,
			h:      Health{State: Open, Paused: true, OpenedAt: earlier, Cooldown: base},
			want:   Health{State: Open, Paused: true, OpenedAt: earlier, Cooldown: base},
		},
		{
			name:   "resume closes a paused breaker",
			action: p.Resume,
			h:      Health{State: Open, Paused: true, ConsecutiveFailures: 7, OpenedAt: earlier, Cooldown: 2400 * time.Second, LastFailureAt: earlier},
			want:   Health{State: Closed, Cooldown: base, LastFailureAt: earlier},
		},
		{
			name:   "resume leaves an automatically opened breaker open",
			action: p.Resume,
			h:      Health{State: Open, ConsecutiveFailures: 10, OpenedAt: earlier, Cooldown: 600 * time.Second},
			want:   Health{State: Open, ConsecutiveFailures: 10, OpenedAt: earlier, Cooldown: 600 * time.Second},
		},
		{
			name:   "force close closes an open breaker",
			action: p.ForceClose,
			h:      Health{State: Open, ConsecutiveFailures: 10, OpenedAt: earlier, Cooldown: 2400 * time.Second},
			want:   Health{State: Closed, Cooldown: base},
		},
		{
			name:   "force close lifts a pause",
			action: p.ForceClose,
			h:      Health{State: Open, Paused: true, ConsecutiveFailures: 3, OpenedAt: earlier, Cooldown: base},
			want:   Health{State: Closed, Cooldown: base},
		},
		{
			name:   "force close ends a probe",
			action: p.ForceClose,
			h:      Health{State: HalfOpen, ConsecutiveFailures: 10, OpenedAt: earlier, Cooldown: 600 * time.Second, LastSuccessAt: earlier},
			want:   Health{State: Closed, Cooldown: base, LastSuccessAt: earlier},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.action(tt.h, now); got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	t.Run("paused breaker is not probed until resumed", func(t *testing.T) {
		h := p.Pause(Health{State: Closed}, now)
		later := now.Add(24 * time.Hour)
		if p.ProbeDue(h, later) || !p.NextProbeAt(h).IsZero() {
			t.Fatalf("paused breaker %+v is due for a probe", h)
		}
		if h = p.Resume(h, later); h.State != Closed || p.ProbeDue(h, later) {
			t.Fatalf("resumed breaker %+v, want closed", h)
		}
	})
}

func TestThresholdNow(t *testing.T) {
	p := DefaultPolicy()
	cases := []struct {
		name    string
		recent  time.Duration
		recentN int
		day     time.Duration
		dayN    int
		want    int
	}{
		{"recent slow with enough samples", 6 * time.Second, 20, 100 * time.Millisecond, 5000, 5},
		{"recent fast wins over a slow day", 100 * time.Millisecond, 20, 6 * time.Second, 5000, 10},
		{"too few recent samples: the day decides", 6 * time.Second, 19, 6 * time.Second, 5000, 5},
		{"too few anywhere", 6 * time.Second, 3, 6 * time.Second, 10, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.ThresholdNow(10, tc.recent, tc.recentN, tc.day, tc.dayN); got != tc.want {
				t.Fatalf("ThresholdNow = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStored: a stored row's columns map to the breaker's view, whichever
// query read them.
func TestStored(t *testing.T) {
	opened := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		got  Health
		want Health
	}{
		{"closed", Stored("closed", 2, nil, 300, false), Health{State: Closed, ConsecutiveFailures: 2, Cooldown: 300 * time.Second}},
		{"open and paused", Stored("open", 10, &opened, 600, true), Health{State: Open, ConsecutiveFailures: 10, OpenedAt: opened, Cooldown: 600 * time.Second, Paused: true}},
		{"half open", Stored("half_open", 0, &opened, 1200, false), Health{State: HalfOpen, OpenedAt: opened, Cooldown: 1200 * time.Second}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}
