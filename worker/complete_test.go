package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/sender"
)

// TestFlushTwoRoundTrips: a batch of results that changes no endpoint's
// health (successes after the first, whose last_success_at is written at
// most once per successResolution) is recorded in two round trips (BEGIN, the health read and the
// update; the attempts, the latency samples and COMMIT), with everything
// it recorded before: delivery state, one attempt row each (a missing
// status code and empty texts as NULL) and a latency_pending row. The
// same batch flushed again (as after a commit whose answer was lost)
// changes nothing. A batch that does change health (failures) takes more
// round trips and records its attempts as well.
func TestFlushTwoRoundTrips(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pool, trips := dbtest.CountedPool(t, e.pool.Config().ConnString())

	rcv := newReceiver(t)
	e.endpoint(endpointOpts{url: rcv.URL})
	e.events(5, "order.created", `{}`)
	// One worker claims; another, on the counted pool and not running (its
	// liveness session's statements would be counted too), records.
	claimer := e.worker(nil)
	e.sole(claimer)
	var logged bytes.Buffer
	w := e.worker(func(c *Config) {
		c.Pool = pool
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	ctx := context.Background()
	rows, err := claimer.claims.claim(ctx, 10, nil)
	if err != nil || len(rows) != 5 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	now := time.Now()
	ok := make([]outcome, 3)
	for i := range ok {
		ok[i] = outcome{d: rows[i], finished: now, res: sender.Result{Outcome: sender.OK, StatusCode: 200, Started: now.Add(-5 * time.Millisecond), Duration: 5 * time.Millisecond}}
	}
	flush := func(batch []outcome) (statements, batches int64) {
		t.Helper()
		s, b := trips.Counts()
		if err := w.complete.flush(ctx, batch); err != nil {
			t.Fatal(err)
		}
		s2, b2 := trips.Counts()
		return s2 - s, b2 - b
	}
	flush(ok[:1])
	if s, b := flush(ok[1:]); s != 0 || b != 2 {
		t.Fatalf("a batch of successes took %d statements and %d batches, want 0 and 2", s, b)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered' AND attempt_count = 1 AND last_status_code = 200"); n != 3 {
		t.Fatalf("%d deliveries delivered, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM delivery_attempts WHERE outcome = 'ok' AND attempt_no = 1 AND status_code = 200
		AND duration_ms = 5 AND error IS NULL AND error_class IS NULL AND response_excerpt IS NULL`); n != 3 {
		t.Fatalf("%d attempt rows as sent, want 3", n)
	}
	if n := e.count("SELECT count(*) FROM latency_pending"); n != 2 {
		t.Fatalf("%d latency_pending rows, want one a batch, 2", n)
	}

	// Again: the fence matches nothing, nothing is written twice, and each
	// result is reported as not recorded.
	logged.Reset()
	flush(ok)
	if n := strings.Count(logged.String(), "result not recorded"); n != len(ok) {
		t.Fatalf("%d results reported as not recorded, want %d:\n%s", n, len(ok), logged.String())
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts"); n != 3 {
		t.Fatalf("%d attempt rows after the batch came again, want 3", n)
	}
	if n := e.count("SELECT count(*) FROM latency_pending"); n != 2 {
		t.Fatalf("%d latency_pending rows after the batch came again, want 2", n)
	}

	// Connection failures change the endpoint's health: more round trips,
	// and their attempts recorded with no status code.
	failed := []outcome{
		{d: rows[3], finished: now, res: sender.Result{Outcome: sender.Transient, ErrorClass: "connect", Error: "connection refused", Started: now}},
		{d: rows[4], finished: now, res: sender.Result{Outcome: sender.Transient, ErrorClass: "connect", Error: "connection refused", Started: now}},
	}
	if _, b := flush(failed); b < 2 {
		t.Fatalf("a batch of failures took %d batches", b)
	}
	if n := e.count(`SELECT count(*) FROM delivery_attempts WHERE outcome = 'transient' AND status_code IS NULL
		AND error_class = 'connect' AND error = 'connection refused'`); n != 2 {
		t.Fatalf("%d failed attempts recorded, want 2", n)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'failed' AND attempt_count = 1"); n != 2 {
		t.Fatalf("%d deliveries failed once, want 2", n)
	}
	if h := e.health(rows[3].EndpointID); h.ConsecutiveFailures != 2 {
		t.Fatalf("consecutive failures %d, want 2", h.ConsecutiveFailures)
	}
}
