package simulate_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hookline/hookline/worker/simulate"
)

// Run two simulated partners on one loopback port and call them.
func Example() {
	tracker := simulate.PostbackTracker()
	tracker.Name = "keitaro"
	s, err := simulate.Start([]simulate.Behavior{tracker, simulate.Unauthorized()}, 42)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	for _, url := range []string{
		s.URL("keitaro") + "postback?subid=abc&tid=T-1&status=sale",
		s.URL("keitaro") + "postback?subid=abc&tid=T-1&status=sale",
		s.URL("unauthorized"),
	} {
		resp, err := http.Get(url)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	requests, failures := s.Stats("unauthorized")
	fmt.Println(requests, failures)

	// The slowing-down curve, fed the elapsed time directly.
	for _, at := range []time.Duration{0, time.Minute, 10 * time.Minute} {
		fmt.Println(simulate.SlowingCurve(2*time.Minute, at))
	}
	// Output:
	// 200 OK
	// 200 duplicate
	// 401 {"error":"invalid_token","message":"The access token is invalid or has been revoked."}
	// 1 1
	// 150ms
	// 1.825s
	// 3.5s
}
