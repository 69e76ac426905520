package main

// Process-level tests: the real hookline binary runs as a child process
// against a fresh database and a loopback receiver, and is killed or stopped
// under load, the way a supervisor or an out-of-memory killer would. They
// check the queue's promises at the process boundary, where unit tests of
// the worker cannot reach: SIGKILL loses nothing (at-least-once, duplicates
// only for sends that were in flight), and SIGTERM finishes or releases every
// in-flight send, records every result and exits 0. dbcrash_test.go does
// the same to PostgreSQL.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/bench/hooklinebin"
)

// TestKill9LosesNothing kills hookline with SIGKILL in the middle of a
// 10,000-event drain. Every event must still reach the receiver, and only
// the deliveries in flight at the kill (sent, their results not recorded)
// may reach it twice.
func TestKill9LosesNothing(t *testing.T) {
	// Not parallel, as the other tests that drain thousands of events:
	// beside another process test on a loaded machine its drain fell
	// below the 150 events a second its 30 s wait allows.
	errs := newRowErrors(t)
	defer errs.summary()
	const events = 10000
	rcv := newCrashReceiver(t, 2*time.Millisecond, 5*time.Millisecond)
	rig := newCrashRig(t, rcv, "5s", 30000) // the receiver holds requests while 10,000 events are posted: they must not time out
	first := rig.start("first run")
	rig.createEndpoint()
	ids := rig.postEvents(events)

	// The receiver has held its requests while the events were posted, so
	// the kill lands in the drain of a fully queued backlog, not in ingest.
	// It fires from the receiver itself at 45 %, however fast the drain is.
	opened := time.Now()
	rcv.openUntil(t, events*45/100, events, first, 30*time.Second)
	first.kill(t)
	ranFor := time.Since(opened)

	// A transaction whose COMMIT reached the server before the kill still
	// commits; wait for the dead process's backends to finish, and for the
	// receiver to finish what reached it, so the state below is the one the
	// crash really left behind.
	rig.waitNoHooklineBackends()
	rcv.settle(t)
	seenAtKill := rcv.seenSnapshot()
	inFlight := rig.sentUnrecorded(seenAtKill)
	if len(inFlight) == 0 {
		t.Fatal("no delivery was in flight at the kill: the test proved nothing")
	}
	t.Logf("killed after %s: receiver had seen %d of %d (%.0f%%, ~%.0f/s); %d sent but not recorded",
		ranFor.Round(time.Millisecond), len(seenAtKill), events, 100*float64(len(seenAtKill))/events,
		float64(len(seenAtKill))/ranFor.Seconds(), len(inFlight))

	// The dead worker's shards were freed with its session; the restarted
	// process takes them and claims what is due, the unrecorded sends
	// included.
	restarted := time.Now()
	second := rig.start("second run")
	rig.waitAllDelivered(events, 60*time.Second, second)
	t.Logf("after restart everything was delivered in %s", time.Since(restarted).Round(time.Millisecond))
	second.terminate(t, 10*time.Second)

	rcv.waitIdle(t, 10*time.Second)
	seen := rcv.seenSnapshot()
	checkAllReceived(errs, ids, seen)
	inFlightEvent := map[string]bool{}
	for _, ev := range inFlight {
		inFlightEvent[ev] = true
	}
	dups := 0
	for id, n := range seen {
		if n > 1 {
			dups++
			if !inFlightEvent[id] || n > 2 {
				errs.errorf("event %s received %d times but was not in flight at the kill", id, n)
			}
		}
	}
	t.Logf("duplicates: %d events received twice; %d were sent and not recorded at the kill", dups, len(inFlight))

	// A crash uses no attempt: every delivery was recorded once, by the run
	// that delivered it.
	for _, d := range rig.deliveries() {
		if d.status != "delivered" {
			errs.errorf("delivery %d is %s, want delivered", d.id, d.status)
			continue
		}
		if d.attemptCount != 1 {
			errs.errorf("delivery %d has attempt_count %d, want 1", d.id, d.attemptCount)
		}
	}

	// Every recorded attempt, those the killed process recorded just before
	// it died included, is a latency sample.
	var sent, samples int64
	rig.queryRow("SELECT count(*) FROM delivery_attempts", nil, &sent)
	rig.queryRow("SELECT coalesce(sum(count), 0)::bigint FROM latency_histograms WHERE resolution_seconds = 60", nil, &samples)
	if samples != sent {
		errs.errorf("latency histograms hold %d samples for %d sent attempts: the crash lost %d", samples, sent, sent-samples)
	}
}

// TestKill9ResumesAtOnce kills hookline while its endpoint's whole
// in-flight allowance (max_in_flight 32) is taken by sends the receiver
// holds open. With leases those sends would have held the cap until they
// expired (timeout 10 s + 30 s margin); claims write nothing now, so the
// dead process held them in memory only: the restarted process takes its
// shards and delivers everything, the 32 included, at once. It logs how long
// after the restarted process was ready the first delivery came.
func TestKill9ResumesAtOnce(t *testing.T) {
	t.Parallel()
	errs := newRowErrors(t)
	defer errs.summary()
	const events, maxInFlight = 400, 32
	rcv := newCrashReceiver(t, time.Millisecond, 2*time.Millisecond)
	rcv.hang.Store(true)
	rig := newCrashRig(t, rcv, "5s", 10000)
	first := rig.start("first run")
	rig.createEndpointCapped(maxInFlight)
	ids := rig.postEvents(events)
	rcv.openUntil(t, maxInFlight, events, first, 30*time.Second)
	first.kill(t)
	killed := time.Now()
	rig.waitNoHooklineBackends()
	rcv.settle(t)
	inFlight := rig.sentUnrecorded(rcv.seenSnapshot())
	if len(inFlight) != maxInFlight {
		t.Fatalf("%d deliveries in flight at the kill, want the endpoint's cap %d", len(inFlight), maxInFlight)
	}

	rcv.hang.Store(false)
	second := rig.start("second run")
	ready := time.Now()
	rig.waitAllDelivered(events, 60*time.Second, second)
	took := time.Since(ready)
	firstAt, ok := rcv.firstArrivalAfter(ready)
	if !ok {
		t.Fatal("no request after the restart")
	}
	t.Logf("first delivery %s after the restarted process was ready; all %d delivered in %s",
		firstAt.Sub(ready).Round(time.Millisecond), events, took.Round(time.Millisecond))
	second.terminate(t, 10*time.Second)

	var lastDelivered time.Time
	rig.queryRow("SELECT max(delivered_at) FROM deliveries", nil, &lastDelivered)
	if leaseEnds := killed.Add(10*time.Second + 30*time.Second); !lastDelivered.Before(leaseEnds) {
		t.Errorf("last delivery at %s, not before a lease taken at the kill would have expired (%s): the dead process's sends held the endpoint",
			lastDelivered.Format(time.RFC3339Nano), leaseEnds.Format(time.RFC3339Nano))
	}
	rcv.waitIdle(t, 10*time.Second)
	seen := rcv.seenSnapshot()
	checkAllReceived(errs, ids, seen)
	inFlightEvent := map[string]bool{}
	for _, ev := range inFlight {
		inFlightEvent[ev] = true
	}
	for id, n := range seen {
		if n > 1 && !inFlightEvent[id] {
			errs.errorf("event %s received %d times but was not in flight at the kill", id, n)
		}
	}
}

// TestKill9LoopDeliversThroughout kills hookline every 1 to 3 s while
// events are posted all along, restarts it at once each time, and checks
// that every accepted event arrives, that only sends in flight at a kill
// (sent, their results not recorded) arrive twice, and that every run
// between two kills delivers: a dead process's sends must not hold the
// endpoint's in-flight cap. It runs 5 cycles; HOOKLINE_KILL_CYCLES=50 runs
// the long version.
func TestKill9LoopDeliversThroughout(t *testing.T) {
	t.Parallel()
	cycles := 5
	if v := os.Getenv("HOOKLINE_KILL_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOOKLINE_KILL_CYCLES=%q: want a positive whole number", v)
		}
		cycles = n
	}
	errs := newRowErrors(t)
	defer errs.summary()
	rcv := newCrashReceiver(t, 5*time.Millisecond, 15*time.Millisecond)
	rcv.open()
	rig := newCrashRig(t, rcv, "5s", 10000)

	var (
		mu       sync.Mutex
		accepted []string
		inFlight = map[string]bool{}
	)
	stopPosting := make(chan struct{})
	var poster sync.WaitGroup
	type run struct {
		ready, killed time.Time
	}
	runs := make([]run, 0, cycles)
	for i := range cycles {
		p := rig.start(fmt.Sprintf("run %d", i+1))
		ready := time.Now()
		if i == 0 {
			// Events posted before the endpoint exists fan out to nothing.
			rig.createEndpointCapped(32)
			poster.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stopPosting:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if ids, ok := rig.tryPostEvents(20, n); ok {
						mu.Lock()
						accepted = append(accepted, ids...)
						mu.Unlock()
					}
				}
			})
		}
		// The load runs for 1 to 3 s, and until this run has delivered
		// something: on a loaded machine a process may take a second to
		// start its worker. Ten seconds without a delivery is a failure.
		time.Sleep(time.Second + mrand.N(2*time.Second))
		for deadline := ready.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, ok := rcv.firstArrivalAfter(ready); ok {
				break
			}
		}
		p.kill(t)
		runs = append(runs, run{ready: ready, killed: time.Now()})
		rig.waitNoHooklineBackends()
		rcv.settle(t)
		mu.Lock()
		for _, ev := range rig.sentUnrecorded(rcv.seenSnapshot()) {
			inFlight[ev] = true
		}
		mu.Unlock()
	}
	close(stopPosting)
	poster.Wait()
	last := rig.start("final run")
	mu.Lock()
	posted := len(accepted)
	mu.Unlock()
	rig.waitAllDeliveredAtLeast(posted, 120*time.Second, last)
	last.terminate(t, 10*time.Second)

	// Every accepted event arrived. A post cut off by a kill may have been
	// stored without its answer reaching us: such an event arrives too, and
	// must be one the database holds.
	rcv.waitIdle(t, 10*time.Second)
	seen := rcv.seenSnapshot()
	isAccepted := make(map[string]bool, len(accepted))
	for _, id := range accepted {
		isAccepted[id] = true
		if seen[id] == 0 {
			errs.errorf("accepted event %s never reached the receiver", id)
		}
	}
	for id := range seen {
		if !isAccepted[id] {
			var stored bool
			rig.queryRow("SELECT EXISTS (SELECT 1 FROM events WHERE id = $1::uuid)", []any{id}, &stored)
			if !stored {
				errs.errorf("receiver got webhook-id %q, which no event has", id)
			}
		}
	}
	dups := 0
	for id, n := range seen {
		if n > 1 {
			dups++
			if !inFlight[id] {
				errs.errorf("event %s received %d times but was not in flight at any kill", id, n)
			}
		}
	}
	var firsts []time.Duration
	for i, r := range runs {
		n := rcv.arrivalsBetween(r.ready, r.killed)
		at, ok := rcv.firstArrivalAfter(r.ready)
		if n == 0 || !ok || !at.Before(r.killed) {
			errs.errorf("run %d delivered nothing in its %s", i+1, r.killed.Sub(r.ready).Round(time.Millisecond))
			continue
		}
		firsts = append(firsts, at.Sub(r.ready))
	}
	slices.Sort(firsts)
	if len(firsts) > 0 {
		t.Logf("%d kills, %d events accepted, %d received twice (%d in flight at a kill); first delivery after each restart: median %s, max %s",
			cycles, posted, dups, len(inFlight), firsts[len(firsts)/2].Round(time.Millisecond), firsts[len(firsts)-1].Round(time.Millisecond))
	}
}

// leaseExpiredRescues returns when each delivery's lease_expired attempts
// were recorded (the rescue's time).
func (r *crashRig) leaseExpiredRescues() map[int64][]time.Time {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), "SELECT delivery_id, started_at FROM delivery_attempts WHERE error_class = 'lease_expired'")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	m := map[int64][]time.Time{}
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			r.t.Fatal(err)
		}
		m[id] = append(m[id], at)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return m
}

// tryPostEvents posts k events as one batch and returns their ids, or false
// if the process was not there to accept them (it is killed at random).
func (r *crashRig) tryPostEvents(k, batch int) ([]string, bool) {
	events := make([]map[string]any, k)
	for i := range events {
		events[i] = map[string]any{"type": "order.created", "payload": map[string]any{"batch": batch, "n": i}}
	}
	b, err := json.Marshal(map[string]any{"events": events})
	if err != nil {
		return nil, false
	}
	req, err := http.NewRequest("POST", "http://"+r.addr+"/api/v1/events/batch", bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if resp.StatusCode != http.StatusAccepted || json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Results) != k {
		return nil, false
	}
	ids := make([]string, k)
	for i, res := range out.Results {
		ids[i] = res.ID
	}
	return ids, true
}

// TestSigtermUnderLoadExitsCleanly sends SIGTERM while a slow receiver holds
// many sends in flight: hookline must let them finish within the grace
// period, record every answer, leave the rest untouched in the queue, exit 0,
// and on restart deliver the rest without sending anything twice.
func TestSigtermUnderLoadExitsCleanly(t *testing.T) {
	// Not parallel, as the other tests that drain thousands of events:
	// its grace period and the endpoint's timeout are wall clock, and
	// beside another process test on a loaded machine answered sends were
	// recorded as failures.
	errs := newRowErrors(t)
	defer errs.summary()
	const (
		events = 2000
		grace  = 5 * time.Second
	)
	rcv := newCrashReceiver(t, 50*time.Millisecond, 50*time.Millisecond)
	rig := newCrashRig(t, rcv, grace.String(), 10000)
	first := rig.start("first run")
	rig.createEndpoint()
	ids := rig.postEvents(events)

	rcv.openUntil(t, events*3/10, events, first, 30*time.Second)
	active := rcv.activeNow()
	took := first.terminate(t, grace+3*time.Second)
	t.Logf("SIGTERM with %d requests open at the receiver; exit 0 after %s", active, took.Round(time.Millisecond))

	rcv.waitIdle(t, 10*time.Second)
	seen, answered := rcv.seenSnapshot(), rcv.answeredSnapshot()
	for id, n := range seen {
		if answered[id] != n {
			errs.errorf("event %s: received %d times, answered %d: a send was cut off although the grace period had time left", id, n, answered[id])
		}
	}
	var delivered, waiting int
	for _, d := range rig.deliveries() {
		switch {
		case d.status == "in_flight":
			errs.errorf("delivery %d still in_flight after a clean exit", d.id)
		case answered[d.eventID] > 0:
			if d.status != "delivered" || d.attemptCount != 1 {
				errs.errorf("delivery %d was answered before exit but is %s with attempt_count %d: the result was lost", d.id, d.status, d.attemptCount)
			}
			delivered++
		case d.status == "pending" || d.status == "failed":
			if d.attemptCount != 0 || !d.due {
				errs.errorf("delivery %d never sent but is %s with attempt_count %d, due now %v", d.id, d.status, d.attemptCount, d.due)
			}
			waiting++
		default:
			errs.errorf("delivery %d is %s with attempt_count %d but the receiver never answered it", d.id, d.status, d.attemptCount)
		}
	}
	t.Logf("after the first run: %d delivered, %d still waiting", delivered, waiting)
	if t.Failed() {
		return
	}

	second := rig.start("second run")
	rig.waitAllDelivered(events, 30*time.Second, second)
	second.terminate(t, grace+3*time.Second)

	rcv.waitIdle(t, 10*time.Second)
	seen = rcv.seenSnapshot()
	for _, id := range ids {
		if seen[id] != 1 {
			errs.errorf("event %s received %d times, want exactly once", id, seen[id])
		}
	}
	if n := len(rig.leaseExpiredRescues()); n != 0 {
		t.Errorf("%d deliveries have lease_expired attempts after graceful shutdowns only", n)
	}
	for _, d := range rig.deliveries() {
		if d.status != "delivered" || d.attemptCount != 1 {
			errs.errorf("delivery %d is %s with attempt_count %d, want delivered after 1", d.id, d.status, d.attemptCount)
		}
	}
}

// TestSigtermGraceExpiresLeavesThemDue stops hookline while every send
// waits on a receiver that never answers: when the grace period runs out the
// sends are cancelled, the deliveries stay in the queue due now without
// using an attempt or blaming the endpoint, and the process exits 0.
func TestSigtermGraceExpiresLeavesThemDue(t *testing.T) {
	t.Parallel()
	errs := newRowErrors(t)
	defer errs.summary()
	const events = 20
	rcv := newCrashReceiver(t, 0, 0)
	rcv.hang.Store(true)
	rig := newCrashRig(t, rcv, "1s", 60000)
	p := rig.start("only run")
	rig.createEndpoint()
	rig.postEvents(events)

	rcv.openUntil(t, events, events, p, 20*time.Second)
	took := p.terminate(t, 5*time.Second)
	t.Logf("SIGTERM with %d sends hanging; exit 0 after %s", events, took.Round(time.Millisecond))

	rows := rig.deliveries()
	if len(rows) != events {
		t.Fatalf("%d deliveries, want %d", len(rows), events)
	}
	for _, d := range rows {
		if d.status != "pending" || d.attemptCount != 0 || !d.due {
			errs.errorf("delivery %d is %s with attempt_count %d, due now %v; want pending, 0, due", d.id, d.status, d.attemptCount, d.due)
		}
	}
	var attempts, failures int
	var state string
	rig.queryRow("SELECT count(*) FROM delivery_attempts", nil, &attempts)
	rig.queryRow("SELECT state, consecutive_failures FROM endpoint_health WHERE endpoint_id = $1", []any{rig.endpointID}, &state, &failures)
	if attempts != 0 {
		t.Errorf("%d attempts recorded for sends cut off by shutdown, want 0", attempts)
	}
	if state != "closed" || failures != 0 {
		t.Errorf("breaker is %s with %d failures after a shutdown; the endpoint was not at fault", state, failures)
	}
}

// rowErrors reports the first few failures of each check and then only how
// many more there were, so a systematic failure over thousands of rows stays
// readable.
type rowErrors struct {
	t      *testing.T
	counts map[string]int
}

const rowErrorsShown = 5

// checkAllReceived reports each posted event the receiver never saw and
// each webhook-id it saw that was never posted.
func checkAllReceived(errs *rowErrors, posted []string, seen map[string]int) {
	known := make(map[string]bool, len(posted))
	for _, id := range posted {
		known[id] = true
		if seen[id] == 0 {
			errs.errorf("event %s never reached the receiver", id)
		}
	}
	for id := range seen {
		if !known[id] {
			errs.errorf("receiver got webhook-id %q, which was never posted", id)
		}
	}
}

func newRowErrors(t *testing.T) *rowErrors {
	return &rowErrors{t: t, counts: map[string]int{}}
}

func (e *rowErrors) errorf(format string, args ...any) {
	e.t.Helper()
	e.counts[format]++
	if e.counts[format] <= rowErrorsShown {
		e.t.Errorf(format, args...)
	}
}

func (e *rowErrors) summary() {
	e.t.Helper()
	for format, n := range e.counts {
		if n > rowErrorsShown {
			e.t.Errorf("... and %d more like %q", n-rowErrorsShown, format)
		}
	}
}

// TestServeRestartsWithSteadySysmon checks that "hookline serve" runs with
// steadySysmon in its GODEBUG, in the process it was started as (the same
// pid, ready and delivering), and that an operator's GODEBUG=schedtrace=0
// keeps the Go runtime's default.
func TestServeRestartsWithSteadySysmon(t *testing.T) {
	t.Parallel()
	rcv := newCrashReceiver(t, 0, 0)
	rcv.open()
	rig := newCrashRig(t, rcv, "5s", 10000)
	environ := func(p *hooklineProc) []string {
		t.Helper()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}

	p := rig.start("default")
	rig.createEndpoint()
	rig.waitAllDelivered(len(rig.postEvents(20)), 30*time.Second, p)
	if got := godebugValues(environ(p)); !slices.Equal(got, []string{steadySysmon}) {
		t.Errorf("GODEBUG %q, want only %q", got, steadySysmon)
	}
	if got, want := len(environ(p)), len(rig.env)+1; got != want {
		t.Errorf("%d environment variables, want the %d given and GODEBUG", got, want)
	}
	if out := p.out.tail(64 << 10); strings.Contains(out, "could not restart") {
		t.Errorf("hookline could not restart itself:\n%s", out)
	}
	p.terminate(t, 30*time.Second)

	rig.env = append(rig.env, "GODEBUG=schedtrace=0")
	q := rig.start("schedtrace=0")
	if got := godebugValues(environ(q)); !slices.Equal(got, []string{"schedtrace=0"}) {
		t.Errorf("GODEBUG %q with the operator's schedtrace=0, want it alone", got)
	}
	q.terminate(t, 30*time.Second)
}

// crashRig is one hookline installation under test: a fresh database, the
// environment of its processes, an API key, and the receiver's endpoint.
type crashRig struct {
	t          *testing.T
	bin        string
	env        []string
	addr       string
	pool       *pgxpool.Pool
	rcv        *crashReceiver
	client     *http.Client
	key        string
	endpointID int64
	timeoutMs  int
}

func newCrashRig(t *testing.T, rcv *crashReceiver, grace string, timeoutMs int) *crashRig {
	t.Helper()
	return newCrashRigOn(t, dbtest.URL(t), rcv, grace, timeoutMs)
}

func newCrashRigOn(t *testing.T, dbURL string, rcv *crashReceiver, grace string, timeoutMs int) *crashRig {
	t.Helper()
	r := &crashRig{
		t:         t,
		bin:       hooklinebin.Path(t),
		addr:      crashLoopbackAddr(t),
		rcv:       rcv,
		timeoutMs: timeoutMs,
		// No keep-alive: the API process is killed and restarted on the
		// same address, and a pooled connection to the dead one would
		// fail the next POST.
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	// A clean environment: nothing from the developer's shell (log level,
	// concurrency, retention) changes what is tested.
	r.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
		"DATABASE_URL=" + dbURL,
		"HOOKLINE_SECRET_KEY=" + crashRandomKey(t),
		"HOOKLINE_SESSION_KEY=" + crashRandomKey(t),
		"HOOKLINE_ADDR=" + r.addr,
		"HOOKLINE_METRICS_ADDR=off",
		"HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8",
		"HOOKLINE_DATA_DIR=" + t.TempDir(),
		"HOOKLINE_SHUTDOWN_GRACE=" + grace,
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r.pool = pool

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(r.bin, "apikey", "create", "--name", "x")
	cmd.Env, cmd.Stdout, cmd.Stderr = r.env, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hookline apikey create: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	r.key = strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(r.key, "hk_") {
		t.Fatalf("apikey create printed %q last", r.key)
	}
	return r
}

// start runs "hookline serve" and waits until it is ready.
func (r *crashRig) start(label string) *hooklineProc {
	t := r.t
	t.Helper()
	p := &hooklineProc{label: label, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(r.bin, "serve")
	p.cmd.Env = r.env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start hookline: %v", err)
	}
	go func() {
		_ = p.cmd.Wait() // the exit status is read from ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("hookline output (%s):\n%s", p.label, p.out.tail(48<<10))
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		resp, err := probe.Get("http://" + r.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("hookline (%s) exited during start: %s", label, p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hookline (%s) not ready within 30 s", label)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createEndpoint registers a partner and a webhook endpoint on the receiver
// with room for many sends at once.
func (r *crashRig) createEndpoint() { r.createEndpointCapped(200) }

// createEndpointCapped is createEndpoint with maxInFlight sends at once.
func (r *crashRig) createEndpointCapped(maxInFlight int) {
	t := r.t
	t.Helper()
	var partner struct {
		ID int64 `json:"id"`
	}
	if status, body := r.call("POST", "/api/v1/partners", map[string]any{"name": "Crash Test Partner"}, &partner); status != http.StatusCreated {
		t.Fatalf("create partner: %d %s", status, body)
	}
	var ep struct {
		ID int64 `json:"id"`
	}
	status, body := r.call("POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner.ID, "name": "receiver", "kind": "webhook", "url": r.rcv.srv.URL + "/hook",
		"max_in_flight": maxInFlight, "timeout_ms": r.timeoutMs,
	}, &ep)
	if status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", status, body)
	}
	r.endpointID = ep.ID
}

// postEvents posts n events in batches of 1000 and returns their ids.
func (r *crashRig) postEvents(n int) []string {
	t := r.t
	t.Helper()
	ids := make([]string, 0, n)
	for off := 0; off < n; off += 1000 {
		k := min(1000, n-off)
		events := make([]map[string]any, k)
		for i := range events {
			events[i] = map[string]any{"type": "order.created", "payload": map[string]any{"n": off + i}}
		}
		var resp struct {
			Accepted int `json:"accepted"`
			Results  []struct {
				ID         string            `json:"id"`
				Deliveries []json.RawMessage `json:"deliveries"`
			} `json:"results"`
		}
		status, body := r.call("POST", "/api/v1/events/batch", map[string]any{"events": events}, &resp)
		if status != http.StatusAccepted || resp.Accepted != k || len(resp.Results) != k {
			t.Fatalf("post batch at %d: %d, %d accepted of %d: %.500s", off, status, resp.Accepted, k, body)
		}
		for _, res := range resp.Results {
			if len(res.Deliveries) != 1 {
				t.Fatalf("event %s queued %d deliveries, want 1", res.ID, len(res.Deliveries))
			}
			ids = append(ids, res.ID)
		}
	}
	return ids
}

// call sends one API request and decodes a JSON answer into out.
func (r *crashRig) call(method, path string, in, out any) (int, string) {
	t := r.t
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, "http://"+r.addr+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, body, err)
		}
	}
	return resp.StatusCode, string(body)
}

func (r *crashRig) exec(sql string, args ...any) {
	r.t.Helper()
	if _, err := r.pool.Exec(context.Background(), sql, args...); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
}

// queryRow scans one row of sql, run with args, into dst.
func (r *crashRig) queryRow(sql string, args []any, dst ...any) {
	r.t.Helper()
	if err := r.pool.QueryRow(context.Background(), sql, args...).Scan(dst...); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
}

// waitNoHooklineBackends waits until no server backend of a hookline
// process (application_name "hookline") is left on the test database.
func (r *crashRig) waitNoHooklineBackends() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		r.queryRow("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hookline'", nil, &n)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d backends of the killed process still open after 10 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sentUnrecorded returns the deliveries that may have reached the receiver
// (it has seen their event) but whose result is not recorded (they are
// still waiting), by id, with their event ids (the webhook-id the receiver
// sees). Taken after a kill, once the killed process's backends are gone
// and the receiver has settled, these are exactly the sends that were in
// flight: the only deliveries that may arrive twice.
func (r *crashRig) sentUnrecorded(seen map[string]int) map[int64]string {
	r.t.Helper()
	m := map[int64]string{}
	for _, d := range r.deliveries() {
		if (d.status == "pending" || d.status == "failed" || d.status == "in_flight") && seen[d.eventID] > 0 {
			m[d.id] = d.eventID
		}
	}
	return m
}

type crashDelivery struct {
	id           int64
	eventID      string
	status       string
	attemptCount int32
	due          bool // next_attempt_at <= now()
}

func (r *crashRig) deliveries() []crashDelivery {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(),
		"SELECT id, event_id::text, status, attempt_count, next_attempt_at <= now() FROM deliveries ORDER BY id")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []crashDelivery
	for rows.Next() {
		var d crashDelivery
		if err := rows.Scan(&d.id, &d.eventID, &d.status, &d.attemptCount, &d.due); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// waitAllDeliveredAtLeast polls until at least n deliveries are delivered
// and none is left to send (events whose post failed may have been stored
// too), failing early if one goes dead or the process exits.
func (r *crashRig) waitAllDeliveredAtLeast(n int, limit time.Duration, p *hooklineProc) {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var delivered, dead, left int
		r.queryRow(`SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'dead'),
		                   count(*) FILTER (WHERE status IN ('pending', 'failed', 'in_flight')) FROM deliveries`, nil, &delivered, &dead, &left)
		switch {
		case delivered >= n && left == 0:
			return
		case dead > 0:
			t.Fatalf("%d deliveries went dead", dead)
		case time.Now().After(deadline):
			t.Fatalf("%d delivered (want at least %d), %d left after %s", delivered, n, left, limit)
		}
		select {
		case <-p.done:
			t.Fatalf("hookline (%s) exited while delivering: %s", p.label, p.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitAllDelivered polls until n deliveries are delivered, failing early if
// one goes dead or the process exits.
func (r *crashRig) waitAllDelivered(n int, limit time.Duration, p *hooklineProc) {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var delivered, dead, inFlight int
		r.queryRow(`SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'dead'),
		                   count(*) FILTER (WHERE status = 'in_flight') FROM deliveries`, nil, &delivered, &dead, &inFlight)
		switch {
		case delivered == n:
			return
		case dead > 0:
			t.Fatalf("%d deliveries went dead", dead)
		case time.Now().After(deadline):
			t.Fatalf("%d of %d delivered after %s (%d in flight)", delivered, n, limit, inFlight)
		}
		select {
		case <-p.done:
			t.Fatalf("hookline (%s) exited while delivering: %s", p.label, p.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hooklineProc is one hookline process run as a child.
type hooklineProc struct {
	label string
	cmd   *exec.Cmd
	out   *lockedBuffer // stdout and stderr
	done  chan struct{} // closed once the process has exited and been reaped
}

// kill sends SIGKILL and waits until the process is gone.
func (p *hooklineProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill hookline (%s): %v", p.label, err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("hookline (%s) not reaped 10 s after SIGKILL", p.label)
	}
}

// terminate sends SIGTERM and requires exit status 0 within limit; it
// returns how long the exit took.
func (p *hooklineProc) terminate(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM hookline (%s): %v", p.label, err)
	}
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("hookline (%s) still running %s after SIGTERM", p.label, limit)
	}
	took := time.Since(sent)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("hookline (%s) exited with %s after SIGTERM, want status 0", p.label, p.cmd.ProcessState)
	}
	return took
}

// crashReceiver is a loopback webhook receiver. It holds requests until
// open, counts every webhook-id it receives and every answer it completes,
// takes a random time in [minDelay, maxDelay] to answer (or never answers,
// with hang), and can signal when its request count reaches a threshold.
type crashReceiver struct {
	srv                *httptest.Server
	minDelay, maxDelay time.Duration
	hang               atomic.Bool
	gate               chan struct{}
	openOnce           sync.Once

	mu       sync.Mutex
	seen     map[string]int
	answered map[string]int
	requests int
	active   int
	trigger  int
	reached  chan struct{}
	arrivals []time.Time // when each request got through the gate
}

func newCrashReceiver(t *testing.T, minDelay, maxDelay time.Duration) *crashReceiver {
	t.Helper()
	rc := &crashReceiver{
		minDelay: minDelay, maxDelay: maxDelay,
		gate: make(chan struct{}),
		seen: map[string]int{}, answered: map[string]int{},
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(func() {
		rc.open()
		rc.srv.Close()
	})
	return rc
}

func (rc *crashReceiver) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	select {
	case <-rc.gate:
	case <-ctx.Done():
		return
	}
	id := r.Header.Get("webhook-id")
	_, _ = io.Copy(io.Discard, r.Body)
	rc.mu.Lock()
	rc.seen[id]++
	rc.arrivals = append(rc.arrivals, time.Now())
	rc.requests++
	rc.active++
	if rc.requests == rc.trigger {
		close(rc.reached)
	}
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.active--
		rc.mu.Unlock()
	}()
	if rc.hang.Load() {
		<-ctx.Done()
		return
	}
	d := rc.minDelay
	if rc.maxDelay > rc.minDelay {
		d += mrand.N(rc.maxDelay - rc.minDelay + 1)
	}
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	rc.mu.Lock()
	rc.answered[id]++
	rc.mu.Unlock()
}

// open lets held and future requests through.
func (rc *crashReceiver) open() { rc.openOnce.Do(func() { close(rc.gate) }) }

// signalAt returns a channel closed when the n-th request arrives.
func (rc *crashReceiver) signalAt(n int) <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.trigger, rc.reached = n, make(chan struct{})
	return rc.reached
}

// openUntil lets the held requests through and returns once n of the
// posted events' requests have arrived; it fails if hookline exits first
// or limit passes.
func (rc *crashReceiver) openUntil(t *testing.T, n, posted int, p *hooklineProc, limit time.Duration) {
	t.Helper()
	reached := rc.signalAt(n)
	rc.open()
	select {
	case <-reached:
	case <-p.done:
		t.Fatalf("hookline (%s) exited on its own after %d requests", p.label, rc.total())
	case <-time.After(limit):
		t.Fatalf("receiver saw %d of %d events within %s", rc.total(), posted, limit)
	}
}

// arrivalsBetween counts the requests that got through in [from, to).
func (rc *crashReceiver) arrivalsBetween(from, to time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, at := range rc.arrivals {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// firstArrivalAfter returns when the first request after t got through.
func (rc *crashReceiver) firstArrivalAfter(t time.Time) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, at := range rc.arrivals {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

func (rc *crashReceiver) total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

func (rc *crashReceiver) activeNow() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.active
}

func (rc *crashReceiver) seenSnapshot() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return clonedCounts(rc.seen)
}

func (rc *crashReceiver) answeredSnapshot() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return clonedCounts(rc.answered)
}

// settle waits until no request is being handled and none has arrived for
// 50 ms: after a kill, what the dead process wrote has all been read.
func (rc *crashReceiver) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for last, since := rc.total(), time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if n := rc.total(); n != last || rc.activeNow() > 0 {
			last, since = n, time.Now()
		} else if time.Since(since) >= 50*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver still busy 10 s after the kill (%d requests open)", rc.activeNow())
		}
	}
}

// waitIdle waits until no request is being handled, so the counts are final.
func (rc *crashReceiver) waitIdle(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for rc.activeNow() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("receiver still handling %d requests after %s", rc.activeNow(), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func clonedCounts(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// crashLoopbackAddr returns a loopback address with a port nobody listens
// on, below the kernel's ephemeral range (freeAddr): the process tests run
// side by side, and their outgoing connections must not take the port
// before the process binds it.
func crashLoopbackAddr(t *testing.T) string {
	t.Helper()
	return freeAddr(t)
}

func crashRandomKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// lockedBuffer collects a child's output; exec copies into it from its own
// goroutine while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail returns at most the last n bytes, starting at a line boundary.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}
