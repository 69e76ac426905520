package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
)

// TestMixSmall runs the receiver mix for seconds: the report names every
// class, the healthy classes' deliveries all have a first attempt, and the
// receiver behaved per class: the down endpoint got nothing delivered, the
// hanging ones never answered 2xx, the failing ones answered 503s, the
// rate-limited one answered 429s and saw no request inside the Retry-After
// it asked for, and no endpoint had more in flight than its cap.
func TestMixSmall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, err := Mix(context.Background(), MixOptions{
		Endpoints: 24, Rate: 120, Duration: 5 * time.Second, Warmup: time.Second,
		Hanging: 2, Failing: 2, Every: time.Second, BurstEvery: 2 * time.Second, BurstFor: time.Second,
		Concurrency: 64, mixSettings: mixSettings{MaxInFlight: 3, Timeout: time.Second},
		DatabaseURL: dbtest.URL(t),
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	got := map[string]MixClass{}
	for _, c := range r.Classes {
		got[c.Class] = c
		if c.MaxInFlight > int64(r.MaxInFlight) {
			t.Errorf("%s: %d in flight at one endpoint, over the cap of %d", c.Class, c.MaxInFlight, r.MaxInFlight)
		}
	}
	for _, c := range []string{classFast, classSlow, classHanging, classFailing, classDown, classLimited} {
		if _, ok := got[c]; !ok {
			t.Fatalf("no %s class in %+v", c, r.Classes)
		}
		if !strings.Contains(out.String(), c) {
			t.Fatalf("the report names no %s class", c)
		}
	}
	for _, c := range []string{classFast, classSlow} {
		l := got[c].EnqueueToAttempt
		if l.Deliveries == 0 || l.Attempted != l.Deliveries || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s: %+v", c, l)
		}
		if got[c].OK == 0 {
			t.Errorf("%s: no 2xx", c)
		}
	}
	if c := got[classDown]; c.Requests != 0 || r.DownDelivered != 0 || c.EnqueueToAttempt.Deliveries == 0 {
		t.Errorf("down: %d requests, %d delivered, %+v", c.Requests, r.DownDelivered, c.EnqueueToAttempt)
	}
	if c := got[classHanging]; c.Requests == 0 || c.OK != 0 {
		t.Errorf("hanging: %d requests, %d answered 2xx", c.Requests, c.OK)
	}
	if c := got[classFailing]; c.Requests == 0 || c.OK == c.Requests {
		t.Errorf("failing: %d requests, %d answered 2xx", c.Requests, c.OK)
	}
	if r.TooMany == 0 || r.Early != 0 {
		t.Errorf("rate-limited: %d answers 429, %d requests inside a Retry-After", r.TooMany, r.Early)
	}
	if r.Events == 0 || len(r.Process) < 3 {
		t.Fatalf("events %d, process samples %+v", r.Events, r.Process)
	}
	for _, s := range r.Process {
		if s.RSS <= 0 || s.Goroutines <= 0 {
			t.Fatalf("process sample %+v", s)
		}
	}
}

// TestOutageSmall runs the outage for seconds: the clean drain and the
// recovery are both measured, the endpoints got nothing while down, every
// one emptied its backlog after the return, and the curve has every phase
// and the fresh events' latency.
func TestOutageSmall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, err := Outage(context.Background(), OutageOptions{
		// 4 events/s to each endpoint, which its cap of 8 sends in flight
		// keeps up with at a median answer of up to 500 ms.
		Endpoints: 10, Down: 2, For: time.Second, Rate: 40, Every: 2 * time.Second,
		Concurrency: 32, RecoveryLimit: 2 * time.Minute,
		// No breaker within seconds: it would probe only after 5 minutes.
		// A delivery refused in the outage is retried once it is over
		// (the backoff's floor is 1 s), within the first gap's 30 s.
		mixSettings: mixSettings{MaxInFlight: 8, Timeout: time.Second, FailureThreshold: 1000},
		DatabaseURL: dbtest.URL(t),
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	if r.CleanBacklog != 8 || r.CleanRate <= 0 || r.CleanEmpty.Count != 2 {
		t.Errorf("clean: backlog %d, rate %.1f, emptied %+v", r.CleanBacklog, r.CleanRate, r.CleanEmpty)
	}
	if !r.Drained || r.RecoveryBacklog == 0 || r.RecoveryRate <= 0 || r.RecoveryEmpty.Count != 2 {
		t.Errorf("recovery: drained %v, backlog %d, rate %.1f, emptied %+v", r.Drained, r.RecoveryBacklog, r.RecoveryRate, r.RecoveryEmpty)
	}
	phases := map[string]bool{}
	fresh := 0
	for _, iv := range r.Intervals {
		phases[iv.Phase] = true
		fresh += iv.Fresh.Attempted
	}
	for _, p := range []string{"clean drain", "outage", "recovery"} {
		if !phases[p] && !strings.Contains(out.String(), p) {
			t.Errorf("no %s in the curve %+v", p, r.Intervals)
		}
	}
	if fresh == 0 || len(r.Process) == 0 {
		t.Errorf("fresh deliveries attempted %d, process samples %d", fresh, len(r.Process))
	}
}
