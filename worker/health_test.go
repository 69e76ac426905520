package worker

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/signing/verifytest"
)

// TestRateLimitHoldsWithFrozenClock: with time frozen, an endpoint limited to
// 20/s with burst 5 gets exactly 5 sends; each simulated second brings 20
// more.
func TestRateLimitHoldsWithFrozenClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rate, burst := 20.0, int32(5)
	e.endpoint(endpointOpts{url: rcv.URL, rate: &rate, burst: &burst, maxInFlight: 100})
	e.events(60, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now })
	e.run(w)
	e.waitFor("the burst", func() bool { return rcv.count.Load() == 5 })
	e.claimsNothing("clock frozen after the burst", w) // no token, no send
	if got := rcv.count.Load(); got != 5 {
		t.Fatalf("%d sends with the clock frozen, want the burst of 5", got)
	}
	clk.Advance(time.Second)
	e.waitFor("one second's worth", func() bool { return rcv.count.Load() >= 10 })
	e.claimsNothing("clock frozen after one second", w)
	// The bucket refills to its burst (5) at most: a second of 20/s is
	// capped by the bucket size.
	if got := rcv.count.Load(); got != 10 {
		t.Fatalf("%d sends after one second, want 10 (burst 5 + 5 refilled, capped by the bucket)", got)
	}
}

// TestRateLimitHeldByTheOwner: with two replicas running, an endpoint's
// rate limit is its owner's alone: with the clock frozen the endpoint gets
// its burst once, not once per replica, and only one replica sends.
func TestRateLimitHeldByTheOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rate, burst := 10.0, int32(8)
	e.endpoint(endpointOpts{url: rcv.URL, rate: &rate, burst: &burst, maxInFlight: 100})
	clk := newClock()
	a := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "a" })
	b := e.worker(func(c *Config) { c.Now = clk.Now; c.WorkerID = "b" })
	e.run(a)
	e.run(b)
	e.owning(a, b)
	e.events(40, "order.created", `{}`)
	e.waitFor("the burst", func() bool { return rcv.count.Load() == 8 })
	e.claimsNothing("clock frozen after the burst", a, b)
	if got := rcv.count.Load(); got != 8 {
		t.Fatalf("%d sends across two replicas with the clock frozen, want the one burst of 8", got)
	}
	if na, nb := a.claims.claimedRows.Load(), b.claims.claimedRows.Load(); na != 0 && nb != 0 {
		t.Fatalf("both replicas sent to one endpoint (%d and %d deliveries)", na, nb)
	}
}

// TestSlowEndpointFlaggedBeforeFailures: an endpoint answering in 200 ms
// for an hour, then in 3 s, is flagged by its recent P95 within a couple of
// minutes, while its 24 h P95 still looks healthy and nothing has failed.
func TestSlowEndpointFlaggedBeforeFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	epID, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:9/"})
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now })
	ctx := context.Background()
	start := clk.Now().Add(-time.Hour)
	samples := latency.NewRecorder()
	observed := func() { // as a completion batch stores them
		t.Helper()
		p, err := pendingRow(samples)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.q.LatencyPendingInsert(ctx, *p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 600 { // an hour of fast answers
		samples.Observe(epID, start.Add(time.Duration(i)*6*time.Second), 200*time.Millisecond, true)
	}
	observed()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	if h := e.health(epID); *h.RecentP95Ms > 250 || *h.P95Ms > 250 {
		t.Fatalf("fast endpoint: recent %v, 24h %v", *h.RecentP95Ms, *h.P95Ms)
	}
	for i := range 30 { // then two minutes of 3 s answers, all successful
		samples.Observe(epID, clk.Now().Add(-2*time.Minute+time.Duration(i)*4*time.Second), 3*time.Second, true)
	}
	observed()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	h := e.health(epID)
	if h.RecentP95Ms == nil || *h.RecentP95Ms < 2900 || h.RecentSampleCount < 20 {
		t.Fatalf("recent P95 %v over %d samples: the slowdown is not visible", h.RecentP95Ms, h.RecentSampleCount)
	}
	if *h.P95Ms > 2000 {
		t.Fatalf("24 h P95 %v: expected it to lag behind", *h.P95Ms)
	}
	if h.ConsecutiveFailures != 0 || h.State != "closed" {
		t.Fatal("slow is not failed")
	}
	// The early warning also tightens the breaker: P95 over 5 s halves the
	// threshold.
	for i := range 30 {
		samples.Observe(epID, clk.Now().Add(-time.Minute+time.Duration(i)*time.Second), 7*time.Second, true)
	}
	observed()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := w.q.EndpointHealthLock(ctx, []int64{epID})
	if err != nil {
		t.Fatal(err)
	}
	if got := newHealthState(w.complete.breaker, rows[0]).threshold; got != 5 {
		t.Fatalf("effective threshold %d with a recent P95 over 5 s, want 5 (10 halved)", got)
	}
}

// TestRotationAcceptedByOfficialVerifier: requests signed during a rotation
// overlap verify with the official npm verifier holding either secret; once
// the old secret expires, only the new one verifies.
func TestRotationAcceptedByOfficialVerifier(t *testing.T) {
	t.Parallel()
	node := verifytest.Require(t)
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, oldSecret := e.endpoint(endpointOpts{url: rcv.URL})
	newSecret := e.rotate(epID, 2*time.Minute)
	// The official verifier accepts timestamps within 5 minutes of the real
	// clock, so the injected clock stays within that while it moves past
	// the overlap. It runs with the real one rather than standing still: a
	// send that fails on a loaded machine is retried after its backoff
	// instead of never coming due.
	var ahead atomic.Int64
	ahead.Store(int64(time.Minute))
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	w := e.worker(func(c *Config) { c.Now = now })
	e.run(w)
	e.events(1, "order.created", `{"during":"overlap","city":"São Paulo"}`)
	e.waitFor("first", func() bool { return rcv.count.Load() == 1 })
	during := rcv.all()[0]
	if n := countSignatures(during); n != 2 {
		t.Fatalf("%d signatures during the overlap, want 2 (new first)", n)
	}

	ahead.Add(int64(2 * time.Minute)) // the old secret has expired
	e.events(1, "order.created", `{"during":"after"}`)
	e.waitFor("second", func() bool { return rcv.count.Load() == 2 })
	after := rcv.all()[1]
	if n := countSignatures(after); n != 1 {
		t.Fatalf("%d signatures after the overlap, want 1", n)
	}

	got := verifytest.Run(t, node, []verifytest.Case{
		caseOf(oldSecret, during), caseOf(newSecret, during),
		caseOf(oldSecret, after), caseOf(newSecret, after),
		{Secret: newSecret, Headers: caseOf(newSecret, after).Headers, Body: `{"during":"tampered"}`},
	})
	want := []bool{true, true, false, true, false}
	for i := range want {
		if got[i].Accepted != want[i] {
			t.Errorf("case %d: accepted=%v (%s), want %v", i, got[i].Accepted, got[i].Error, want[i])
		}
	}
}

// TestRotationReachesARunningWorker: a worker that has already signed with
// an endpoint's secret signs the next delivery after a rotation with both
// secrets, new first. The worker caches decrypted secrets and reloads them
// only when a claim returns a new secret_version, which adding a secret
// must move.
func TestRotationReachesARunningWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, oldSecret := e.endpoint(endpointOpts{url: rcv.URL})
	e.run(e.worker(nil))
	e.events(1, "order.created", `{"n":1}`)
	e.waitFor("first", func() bool { return rcv.count.Load() == 1 })
	if n := countSignatures(rcv.all()[0]); n != 1 {
		t.Fatalf("%d signatures before the rotation, want 1", n)
	}

	newSecret := e.rotate(epID, time.Hour)
	e.events(1, "order.created", `{"n":2}`)
	e.waitFor("second", func() bool { return rcv.count.Load() == 2 })
	after := rcv.all()[1]
	var keys [][]byte
	for _, secret := range []string{newSecret, oldSecret} {
		key, err := signing.ParseSecret(secret)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	unix, err := strconv.ParseInt(after.Header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := signing.Sign(keys, after.Header.Get("webhook-id"), time.Unix(unix, 0), after.Body)
	if got := after.Header.Get("webhook-signature"); got != want {
		t.Fatalf("signature after the rotation %q, want %q (new secret, then old)", got, want)
	}
}

func countSignatures(r received) int {
	return len(strings.Fields(r.Header.Get("webhook-signature")))
}

func caseOf(secret string, r received) verifytest.Case {
	return verifytest.Case{Secret: secret, Body: string(r.Body), Headers: map[string]string{
		"webhook-id": r.Header.Get("webhook-id"), "webhook-timestamp": r.Header.Get("webhook-timestamp"),
		"webhook-signature": r.Header.Get("webhook-signature")}}
}
