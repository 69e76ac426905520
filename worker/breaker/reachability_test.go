package breaker

import (
	"testing"
	"time"
)

// TestReachCheckDue: which breakers the reachability check looks at. Only
// an open, unpaused breaker whose endpoint failed in the transport and is
// sent directly, before its cooldown's probe is due, and not within the
// gap after a failed probe.
func TestReachCheckDue(t *testing.T) {
	p := DefaultPolicy()
	open := Health{State: Open, ConsecutiveFailures: 10, OpenedAt: t0, Cooldown: base}
	// reopened after a failed probe at t0: the cooldown doubled.
	reopened := Health{State: Open, ConsecutiveFailures: 11, OpenedAt: t0, Cooldown: 2 * base}
	tests := []struct {
		name              string
		h                 Health
		transport, direct bool
		at                time.Duration // after t0
		want              bool
	}{
		{"refused, direct, just opened", open, true, true, 0, true},
		{"refused, direct, 5 s after", open, true, true, 5 * time.Second, true},
		{"refused, direct, a second before the cooldown's probe", open, true, true, base - time.Second, true},
		{"the cooldown's probe is due: StartProbe's", open, true, true, base, false},
		{"5xx or a response timeout", open, false, true, 5 * time.Second, false},
		{"through an egress proxy", open, true, false, 5 * time.Second, false},
		{"neither", open, false, false, 5 * time.Second, false},
		{"paused by an operator", Health{State: Open, OpenedAt: t0, Cooldown: base, Paused: true}, true, true, 5 * time.Second, false},
		{"half open: the probe is in flight", Health{State: HalfOpen, OpenedAt: t0, Cooldown: base}, true, true, 5 * time.Second, false},
		{"closed", Health{State: Closed, ConsecutiveFailures: 3}, true, true, 5 * time.Second, false},
		{"never failed (zero Health)", Health{}, true, true, 0, false},
		{"after a failed probe, within the gap", reopened, true, true, 2*base/EarlyProbeGap - time.Second, false},
		{"after a failed probe, past the gap", reopened, true, true, 2 * base / EarlyProbeGap, true},
		{"at the longest cooldown, within the gap", Health{State: Open, OpenedAt: t0, Cooldown: maxC}, true, true, maxC/EarlyProbeGap - time.Second, false},
		{"at the longest cooldown, past the gap", Health{State: Open, OpenedAt: t0, Cooldown: maxC}, true, true, maxC / EarlyProbeGap, true},
		// A stored cooldown of 0 (or below the base) is the base: checked
		// at once, as a breaker that just opened.
		{"stored cooldown below the base", Health{State: Open, OpenedAt: t0}, true, true, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.ReachCheckDue(tt.h, tt.transport, tt.direct, t0.Add(tt.at)); got != tt.want {
				t.Fatalf("ReachCheckDue(%+v, transport %t, direct %t, t0+%s) = %t, want %t",
					tt.h, tt.transport, tt.direct, tt.at, got, tt.want)
			}
		})
	}
}

// TestReachCheckNeverPassesTheCooldown: wherever the check says yes, the
// cooldown's own probe is not yet due; the check only ever brings a probe
// forward.
func TestReachCheckNeverPassesTheCooldown(t *testing.T) {
	p := DefaultPolicy()
	for c := base; c <= maxC; c *= 2 {
		h := Health{State: Open, OpenedAt: t0, Cooldown: min(c, maxC)}
		for at := time.Duration(0); at <= 2*maxC; at += 15 * time.Second {
			if p.ReachCheckDue(h, true, true, t0.Add(at)) && p.ProbeDue(h, t0.Add(at)) {
				t.Fatalf("cooldown %s, t0+%s: both the check and the cooldown's probe are due", c, at)
			}
		}
	}
}
