package main

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/db/embedded"
)

// TestPostgresCrashLosesNothing crashes PostgreSQL (an immediate shutdown:
// no checkpoint, WAL not yet written is gone, recovery at the next start)
// while hookline drains 10,000 deliveries, then starts it again. hookline
// keeps running through the outage. Claims commit asynchronously, so the
// crash may forget claims of rows already sent: those, and only rows sent
// before the crash, may arrive twice; nothing may be lost, and nothing may
// be sent more than twice.
func TestPostgresCrashLosesNothing(t *testing.T) {
	// Not parallel, as the other tests that drain thousands of events.
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("no local PostgreSQL installation")
	}
	errs := newRowErrors(t)
	defer errs.summary()
	const events = 10000
	ctx := context.Background()
	// Its own cluster with fsync on (the shared test cluster runs without):
	// what is durable at the crash is the point. Not t.TempDir: its parent
	// is 0700, which the postgres user cannot enter when tests run as root.
	dir, err := os.MkdirTemp("", "hlpgcrash")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	start := func() *embedded.Cluster {
		t.Helper()
		c, err := embedded.Start(ctx, embedded.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cluster := start()
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })

	rcv := newCrashReceiver(t, 2*time.Millisecond, 5*time.Millisecond)
	// The receiver holds requests while 10,000 events are posted: they must
	// not time out (and open the breaker) on a loaded machine.
	rig := newCrashRigOn(t, cluster.URL(), rcv, "5s", 30000)
	p := rig.start("serve")
	rig.createEndpoint()
	ids := rig.postEvents(events)

	rcv.openUntil(t, events*45/100, events, p, 30*time.Second)
	pid, err := cluster.PID()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil { // what pg_ctl stop -m immediate sends
		t.Fatal(err)
	}
	if !waitExited(pid, 30*time.Second) {
		t.Fatalf("postmaster %d still running 30 s after SIGQUIT", pid)
	}
	seenAtCrash := rcv.seenSnapshot()
	// Sends in flight finish against a database that is gone; hookline
	// holds their results and retries. It is still there once they have
	// all finished and it answers that its database is unreachable.
	rig.waitOutage(p, 30*time.Second)
	cluster = start()
	rig.waitDatabase(30 * time.Second)
	rig.waitAllDelivered(events, 90*time.Second, p)
	p.terminate(t, 15*time.Second)
	rcv.waitIdle(t, 10*time.Second)

	seen := rcv.seenSnapshot()
	checkAllReceived(errs, ids, seen)
	dups := 0
	for id, n := range seen {
		switch {
		case n > 2:
			errs.errorf("event %s received %d times", id, n)
		case n == 2:
			dups++
			if seenAtCrash[id] == 0 {
				errs.errorf("event %s received twice, both times after the crash", id)
			}
		}
	}
	t.Logf("crash after %d of %d events had arrived; %d arrived twice (all first sent before the crash)",
		len(seenAtCrash), events, dups)
	for _, d := range rig.deliveries() {
		if d.status != "delivered" {
			errs.errorf("delivery %d is %s, want delivered", d.id, d.status)
		}
	}
}

// waitOutage waits until the receiver has no request open (what was in
// flight at the crash has been answered, its result held by hookline) and
// hookline's /readyz answers 503 (it is up and sees its database gone). It
// fails if hookline exits first or limit passes.
func (r *crashRig) waitOutage(p *hooklineProc, limit time.Duration) {
	r.t.Helper()
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(limit)
	status, active := 0, 0
	for {
		status, active = 0, r.rcv.activeNow()
		if resp, err := probe.Get("http://" + r.addr + "/readyz"); err == nil {
			resp.Body.Close()
			status = resp.StatusCode
		}
		if active == 0 && status == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("within %s of the crash: /readyz answered %d (want 503), %d requests still open at the receiver", limit, status, active)
		}
		select {
		case <-p.done:
			r.t.Fatalf("hookline exited while PostgreSQL was down: %s", p.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-p.done:
		r.t.Fatalf("hookline exited while PostgreSQL was down: %s", p.cmd.ProcessState)
	default:
	}
}

// waitDatabase waits until the rig's pool can query again (after a
// restart its old connections are dead).
func (r *crashRig) waitDatabase(limit time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		_, err := r.pool.Exec(context.Background(), "SELECT 1")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("database not back within %s: %v", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
