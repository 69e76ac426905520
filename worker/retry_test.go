package worker

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func attemptStarts(t *testing.T, e *env, deliveryID int64) []time.Time {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), "SELECT started_at FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt_no", deliveryID)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestTransientFailuresBackOffUntilDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusInternalServerError))
	e.endpoint(endpointOpts{url: rcv.URL, maxAttempts: 4})
	ids := e.events(1, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0.5) })
	e.run(w)

	// With the jitter fixed at half the cap, the gaps are 15 s, 30 s, 60 s
	// (half of 30 s·2^(n-1)).
	for n, gap := range []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second} {
		e.waitFor("attempt", func() bool { return rcv.count.Load() == int64(n+1) })
		// A claim writes nothing: the delivery is "failed" (awaiting a
		// retry) while the retry is sent, so wait for its attempt count.
		e.waitFor("the attempt recorded", func() bool { return e.delivery(ids[0]).AttemptCount == int32(n+1) })
		d := e.delivery(ids[0])
		if want := clk.Now().Add(gap); !d.NextAttemptAt.Equal(want) {
			t.Fatalf("after attempt %d next_attempt_at = %s, want %s", n+1, d.NextAttemptAt, want)
		}
		clk.Advance(gap - time.Second)
		e.claimsNothing("a second before the retry", w) // nothing may be sent early
		if got := rcv.count.Load(); got != int64(n+1) {
			t.Fatalf("retry %d sent %s early", n+1, time.Second)
		}
		clk.Advance(time.Second)
	}
	e.waitFor("dead", func() bool { return e.delivery(ids[0]).Status == "dead" })
	d := e.delivery(ids[0])
	if d.AttemptCount != 4 || *d.LastStatusCode != 500 || *d.LastErrorClass != "http_status" || d.DeadAt == nil {
		t.Fatalf("dead delivery %+v", d)
	}
	starts := attemptStarts(t, e, d.ID)
	if len(starts) != 4 {
		t.Fatalf("attempt rows = %d", len(starts))
	}
	for i, want := range []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second} {
		if got := starts[i+1].Sub(starts[i]); got != want {
			t.Fatalf("gap %d = %s, want %s", i+1, got, want)
		}
	}
}

func TestPermanentFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := newReceiver(t)
	bad.setHandler(respond(http.StatusBadRequest))
	gone := newReceiver(t)
	gone.setHandler(respond(http.StatusGone))
	redirect := newReceiver(t)
	redirect.setHandler(respond(http.StatusFound, "Location", "http://127.0.0.1:1/elsewhere"))
	e.endpoint(endpointOpts{url: bad.URL})
	goneID, _ := e.endpoint(endpointOpts{url: gone.URL})
	e.endpoint(endpointOpts{url: redirect.URL})
	e.events(1, "order.created", `{}`)
	e.run(e.worker(nil))
	e.waitFor("three dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 3 })
	if n := e.count("SELECT count(*) FROM deliveries WHERE attempt_count <> 1"); n != 0 {
		t.Fatal("a permanent failure was retried")
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE last_error_class = 'redirect' AND last_status_code = 302"); n != 1 {
		t.Fatal("3xx not classified as a redirect failure")
	}
	ep, err := e.q.EndpointGet(context.Background(), goneID)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Enabled || !strings.Contains(ep.DisabledReason, "410") {
		t.Fatalf("410 did not disable the endpoint: enabled=%v reason=%q", ep.Enabled, ep.DisabledReason)
	}
	if ep.DisabledCause != "gone" || ep.DisabledAt == nil {
		t.Fatalf("410 disable recorded as cause %q at %v", ep.DisabledCause, ep.DisabledAt)
	}
	// A disabled endpoint's new deliveries are held: queued, never claimed
	// (the other two endpoints' deliveries of the same event are sent and
	// die meanwhile), never dead.
	e.events(1, "order.created", `{}`)
	e.waitFor("five dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 5 })
	if n := e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'pending' AND attempt_count = 0", goneID); n != 1 {
		t.Fatalf("disabled endpoint: %d held deliveries, want 1", n)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusTooManyRequests, "Retry-After", "7"))
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	ids := e.events(1, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0) })
	e.run(w)
	e.waitFor("first attempt", func() bool { return e.delivery(ids[0]).Status == "failed" })
	d := e.delivery(ids[0])
	if want := clk.Now().Add(7 * time.Second); d.NextAttemptAt.Before(want) {
		t.Fatalf("next attempt %s is sooner than Retry-After (%s)", d.NextAttemptAt, want)
	}
	h := e.health(epID)
	if h.PausedUntil == nil || h.PausedUntil.Before(clk.Now().Add(7*time.Second)) {
		t.Fatalf("endpoint not paused until Retry-After: %v", h.PausedUntil)
	}
	clk.Advance(6 * time.Second)
	e.claimsNothing("before Retry-After", w)
	if rcv.count.Load() != 1 {
		t.Fatal("retried before Retry-After")
	}
	rcv.setHandler(respond(http.StatusOK))
	clk.Advance(time.Second)
	e.waitFor("delivered", func() bool { return e.delivery(ids[0]).Status == "delivered" })
}

func TestBlockedDestinationIsNeverDialled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	ids := e.events(1, "order.created", `{}`)
	w := e.worker(func(c *Config) { c.Guard = ssrfDefault() })
	e.run(w)
	e.waitFor("dead", func() bool { return e.delivery(ids[0]).Status == "dead" })
	d := e.delivery(ids[0])
	if *d.LastErrorClass != "blocked_destination" || !strings.Contains(*d.LastError, "127.0.0.1") {
		t.Fatalf("class %q error %q", *d.LastErrorClass, *d.LastError)
	}
	if rcv.count.Load() != 0 {
		t.Fatal("the blocked receiver was reached")
	}
}

// TestDeadLettersAreTallied: deliveries that die are counted into the
// dead-letter tallies the dead-letter page reads (migration 00027), and
// the maintenance loop folds their changes in: the tallies then hold every
// dead letter, its attempts and its event's payout, with no change left.
func TestDeadLettersAreTallied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := newReceiver(t)
	bad.setHandler(respond(http.StatusBadRequest))
	e.endpoint(endpointOpts{url: bad.URL})
	e.events(3, "order.created", `{"payout": "2.50", "currency": "EUR"}`)
	e.run(e.worker(nil))
	e.waitFor("three dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 3 })
	e.waitFor("the tallies folded", func() bool { return e.count("SELECT count(*) FROM dead_letter_tally_changes") == 0 })
	var dead, attempts, payouts int64
	var payout float64
	var class, currency string
	if err := e.pool.QueryRow(context.Background(), `SELECT sum(dead)::bigint, sum(attempts)::bigint, sum(payouts)::bigint, sum(payout)::float8,
		min(error_class), min(currency) FROM dead_letter_tallies`).Scan(&dead, &attempts, &payouts, &payout, &class, &currency); err != nil {
		t.Fatal(err)
	}
	if dead != 3 || attempts != 3 || payouts != 3 || payout != 7.5 || class != "http_status" || currency != "EUR" {
		t.Fatalf("tallies: %d dead, %d attempts, %d payouts summing %v, class %q, currency %q; want 3, 3, 3 summing 7.5, http_status, EUR",
			dead, attempts, payouts, payout, class, currency)
	}
}
