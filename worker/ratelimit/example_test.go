package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/worker/ratelimit"
)

// Example is one claim cycle of the worker: caps from Snapshot go into the
// claim query, and the deliveries it returned are taken from the bucket.
func Example() {
	r := ratelimit.NewRegistry()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	// A tracker allows 10 postbacks a second with bursts of 10; two
	// replicas are alive, so this one may use half.
	r.Set(42, ratelimit.Limit{PerSecond: 10, Burst: 10}, 2, now)
	// Another partner answered 429 with Retry-After: 30.
	r.PauseUntil(7, now.Add(30*time.Second))

	ids, avail := r.Snapshot(now)
	fmt.Println("claim caps:", ids, avail)

	// The claim returned 5 deliveries for endpoint 42.
	r.Take(42, 5, now)
	n, _ := r.Available(42, now.Add(400*time.Millisecond))
	fmt.Println("after 400ms:", n)
	// Output:
	// claim caps: [7 42] [0 5]
	// after 400ms: 2
}
