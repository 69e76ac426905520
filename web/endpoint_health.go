package web

// An endpoint's breaker as the API and the pages show it; the rules are
// breaker.Policy's.

import (
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/worker/breaker"
)

func breakerData(e db.Endpoint, h db.EndpointHealth, now time.Time) components.BreakerData {
	b := components.BreakerData{State: h.State, Paused: h.Paused, Enabled: e.Enabled, DisabledReason: e.DisabledReason, Now: now}
	b.NextProbe = nextProbeAt(h)
	b.Budget = budgetData(e, h, now)
	return b
}

// breakerHealth is the breaker package's view of a stored endpoint_health
// row.
func breakerHealth(h db.EndpointHealth) breaker.Health {
	return breaker.Stored(h.State, h.ConsecutiveFailures, h.OpenedAt, h.CooldownSeconds, h.Paused)
}

// nextProbeAt is when the worker will probe an open breaker, nil when no
// probe is scheduled (closed, half open, or paused by an operator).
func nextProbeAt(h db.EndpointHealth) *time.Time {
	if h.OpenedAt == nil { // not open, or a row no breaker transition wrote
		return nil
	}
	t := breaker.DefaultPolicy().NextProbeAt(breakerHealth(h))
	if t.IsZero() {
		return nil
	}
	return &t
}
