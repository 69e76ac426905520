package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// queueQuietly stores an event and its delivery to endpointID, due at due,
// without waking any worker.
func (e *env) queueQuietly(endpointID int64, due time.Time) uuid.UUID {
	e.t.Helper()
	id := uuid.New()
	if _, err := e.pool.Exec(context.Background(), `
		WITH ev AS (INSERT INTO events (id, type, payload) VALUES ($1, 'order.created', '{}') RETURNING id)
		INSERT INTO deliveries (event_id, endpoint_id, max_attempts, next_attempt_at) SELECT id, $2, 5, $3 FROM ev`,
		id, endpointID, due); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// notify sends the wake-up NOTIFY with payload, as ingest does.
func (e *env) notify(payload string) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), "SELECT pg_notify('hookline_deliveries', $1)", payload); err != nil {
		e.t.Fatal(err)
	}
}

// settled waits until w owns every shard, listens, and every look
// everywhere its start asked for (the claim loop's first claim, the
// liveness lock, the listener, the shards taken: four) has been made: from
// then on, with a long poll interval, only what the test does makes w look
// everywhere.
func (e *env) settled(w *Worker) {
	e.t.Helper()
	e.owning(w)
	e.waitFor("the worker's LISTEN", func() bool {
		return e.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN hookline_deliveries'") == 1
	})
	e.waitFor("the looks everywhere the start asked for", func() bool {
		asked := w.claims.hints.askedEverywhere()
		return asked >= 4 && w.claims.lookedFor.Load() >= asked
	})
}

// dueAtTwoEndpoints runs a settled worker that polls once an hour, and
// queues a delivery to each of two endpoints, A and B, without waking it;
// both are due by the worker's clock when it returns. A claim that looked
// everywhere would take both in one statement.
func dueAtTwoEndpoints(t *testing.T) (e *env, w *Worker, a, b int64, evA, evB uuid.UUID) {
	t.Helper()
	e = newEnv(t)
	rcv := newReceiver(t)
	a, _ = e.endpoint(endpointOpts{url: rcv.URL + "/a"})
	b, _ = e.endpoint(endpointOpts{url: rcv.URL + "/b"})
	clk := newClock()
	w = e.worker(func(c *Config) { c.Now = clk.Now; c.PollInterval = time.Hour })
	e.run(w)
	e.settled(w)
	later := clk.Now().Add(time.Minute)
	evB = e.queueQuietly(b, later)
	evA = e.queueQuietly(a, later)
	clk.Advance(2 * time.Minute)
	return e, w, a, b, evA, evB
}

// TestWakeClaimsNamedEndpoints: a NOTIFY that names endpoints makes the
// worker claim at those endpoints only. B's delivery is as due as A's, and
// a claim that looked everywhere would have taken both in one statement;
// after A's arrives B's is still pending, until a wake-up that names no
// endpoint.
func TestWakeClaimsNamedEndpoints(t *testing.T) {
	t.Parallel()
	e, _, a, _, evA, evB := dueAtTwoEndpoints(t)
	e.notify(fmt.Sprint(a))
	e.waitFor("A's delivery", func() bool { return e.delivery(evA).Status == "delivered" })
	if s := e.delivery(evB).Status; s != "pending" {
		t.Fatalf("B's delivery is %s: the claim looked beyond the endpoint the NOTIFY named", s)
	}

	e.notify("")
	e.waitFor("B's delivery after a NOTIFY naming no endpoint", func() bool { return e.delivery(evB).Status == "delivered" })
}

// TestWakeStillLooksEverywhere: wake-ups that keep naming one endpoint do
// not hide another's due delivery for longer than the poll interval (the
// poll timer itself never fires while wake-ups keep coming).
func TestWakeStillLooksEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	a, _ := e.endpoint(endpointOpts{url: rcv.URL + "/a"})
	b, _ := e.endpoint(endpointOpts{url: rcv.URL + "/b"})
	w := e.worker(func(c *Config) { c.PollInterval = 300 * time.Millisecond })
	e.run(w)
	e.settled(w)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = e.pool.Exec(ctx, "SELECT pg_notify('hookline_deliveries', $1)", fmt.Sprint(a))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	ev := e.queueQuietly(b, time.Now().Add(-time.Second))
	e.waitFor("B's delivery among wake-ups naming A", func() bool { return e.delivery(ev).Status == "delivered" })
	cancel()
	<-done
}

// TestWakeFor: an ingest in the same process names the endpoints it
// queued for with WakeFor instead of a NOTIFY, and the worker claims at
// those endpoints only, at once (its poll interval is an hour): B's
// delivery stays pending until B is named too.
func TestWakeFor(t *testing.T) {
	t.Parallel()
	e, w, a, b, evA, evB := dueAtTwoEndpoints(t)
	w.WakeFor() // names nothing: no claim
	w.WakeFor(a)
	e.waitFor("A's delivery", func() bool { return e.delivery(evA).Status == "delivered" })
	if s := e.delivery(evB).Status; s != "pending" {
		t.Fatalf("B's delivery is %s: the claim looked beyond the endpoint named", s)
	}
	w.WakeFor(b)
	e.waitFor("B's delivery once named", func() bool { return e.delivery(evB).Status == "delivered" })
}

// TestClaimsEverything: a worker alone, once it holds every shard, claims
// everything (an ingest beside it then sends no NOTIFY); with a second
// worker live, neither does, and a worker that lost its session does not.
func TestClaimsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.worker(func(c *Config) { c.WorkerID = "a" })
	b := e.worker(func(c *Config) { c.WorkerID = "b" })
	if a.ClaimsEverything() {
		t.Fatal("a worker without a session claims everything")
	}
	killA := e.alive(a)
	e.owning(a)
	if !a.ClaimsEverything() {
		t.Fatal("a worker alone, holding every shard, does not claim everything")
	}
	killB := e.alive(b)
	e.owning(a, b)
	if a.ClaimsEverything() || b.ClaimsEverything() {
		t.Fatalf("with two workers live: a claims everything %v, b %v", a.ClaimsEverything(), b.ClaimsEverything())
	}
	killA()
	if a.ClaimsEverything() {
		t.Fatal("a worker whose session ended claims everything")
	}
	e.owning(b)
	if !b.ClaimsEverything() {
		t.Fatal("the one worker left, holding every shard, does not claim everything")
	}
	killB()
}

func TestParseEndpointList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		ids  []int64
		okay bool
	}{
		{"", nil, false},
		{"7", []int64{7}, true},
		{"12,7,40", []int64{12, 7, 40}, true},
		{"12,,40", nil, false},
		{"12,x", nil, false},
		{"-3", nil, false},
		{"0", nil, false},
	} {
		ids, ok := parseEndpointList(c.in)
		if ok != c.okay || (ok && !slices.Equal(ids, c.ids)) {
			t.Errorf("parseEndpointList(%q) = %v, %v; want %v, %v", c.in, ids, ok, c.ids, c.okay)
		}
	}
}

func TestClaimHints(t *testing.T) {
	t.Parallel()
	var h claimHints
	if ids, all, _ := h.take(); ids != nil || all {
		t.Fatalf("empty hints gave %v, %v", ids, all)
	}
	h.add(3, 1, 3)
	ids, all, _ := h.take()
	slices.Sort(ids)
	if all || !slices.Equal(ids, []int64{1, 3}) {
		t.Fatalf("take = %v, %v; want [1 3]", ids, all)
	}
	if ids, all, _ := h.take(); ids != nil || all {
		t.Fatalf("a second take gave %v, %v", ids, all)
	}
	h.add(1)
	h.all()
	h.add(2)
	if ids, all, asked := h.take(); ids != nil || !all || asked != 1 {
		t.Fatalf("after all: %v, %v, asked %d; want everywhere, asked once", ids, all, asked)
	}
	for i := range maxHinted + 1 {
		h.add(int64(i + 1))
	}
	if ids, all, asked := h.take(); ids != nil || !all || asked != 1 {
		t.Fatalf("over %d endpoints: %d ids, %v, asked %d; want everywhere", maxHinted, len(ids), all, asked)
	}
}
