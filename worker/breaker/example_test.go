package breaker_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/worker/breaker"
)

// Example follows one endpoint through an outage: it fails until the
// breaker opens, waits out the cooldown, and closes when the probe succeeds.
func Example() {
	p := breaker.DefaultPolicy()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

	// The endpoint is configured with failure_threshold 10, but its P95 is
	// 8 s over 50 samples, so the breaker opens after 5.
	threshold := p.EffectiveThreshold(10, 8*time.Second, 50)
	h := breaker.Health{State: breaker.Closed, Cooldown: p.BaseCooldown}
	for range threshold {
		h = p.Failure(h, threshold, now)
	}
	fmt.Printf("%s after %d failures, next probe %s\n", h.State, h.ConsecutiveFailures, p.NextProbeAt(h).Format(time.TimeOnly))

	_, ok := p.StartProbe(h, now.Add(time.Minute))
	fmt.Println("probe after 1m:", ok)

	now = p.NextProbeAt(h)
	h, ok = p.StartProbe(h, now)
	fmt.Println("probe at cooldown:", ok, h.State)

	h = p.Success(h, now.Add(300*time.Millisecond))
	fmt.Println("probe answered:", h.State, h.ConsecutiveFailures, h.Cooldown)
	// Output:
	// open after 5 failures, next probe 12:05:00
	// probe after 1m: false
	// probe at cooldown: true half_open
	// probe answered: closed 0 5m0s
}
