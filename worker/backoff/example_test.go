package backoff_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/worker/backoff"
)

// midpoint always draws the middle of the jitter window, so the example's
// output is stable. Production code passes a *math/rand/v2.Rand.
type midpoint struct{}

func (midpoint) Float64() float64 { return 0.5 }

func Example() {
	p := backoff.Default()
	for n := 1; n <= 4; n++ {
		fmt.Printf("after attempt %d: wait %s\n", n, p.Delay(n, midpoint{}))
	}

	// A 429 with Retry-After: 300 (the sender parses the header): the
	// partner's wait wins when it is longer.
	fmt.Println("after attempt 1 with Retry-After:", p.Next(1, 5*time.Minute, midpoint{}))

	fmt.Println("worst-case retry window for 5 attempts:", p.WorstCase(5))
	// Output:
	// after attempt 1: wait 15s
	// after attempt 2: wait 30s
	// after attempt 3: wait 1m0s
	// after attempt 4: wait 2m0s
	// after attempt 1 with Retry-After: 5m0s
	// worst-case retry window for 5 attempts: 7m30s
}
