package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestRetentionDeletesOldRowsInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	e.events(10, "order.created", `{}`)
	w := e.worker(nil)
	e.run(w)
	e.waitFor("delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 10 })
	ctx := context.Background()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	// Ten deliveries of events past their retention, one of them dead
	// (dead letters are kept), and half of the recent attempts aged.
	old := time.Now().Add(-8 * 24 * time.Hour)
	// The dead letter is made in the same statement as the rest: the
	// worker's own first pass runs at any moment, and one that came
	// between would delete every old delivery first.
	e.oldDelivered(epID, 10, old, 1)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec("UPDATE delivery_attempts SET started_at = $1 WHERE delivery_id % 2 = 0", old)
	exec("INSERT INTO latency_histograms (endpoint_id, resolution_seconds, bucket_start) VALUES ($1, 60, $2), ($1, 3600, $2), ($1, 3600, $3)",
		epID, time.Now().Add(-49*time.Hour), time.Now().Add(-31*24*time.Hour))

	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM deliveries"); n != 11 { // 10 recent + the dead letter
		t.Fatalf("deliveries left: %d, want 11", n)
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts"); n != 5 {
		t.Fatalf("attempts left: %d, want 5", n)
	}
	if n := e.count("SELECT count(*) FROM events"); n != 11 { // events with a delivery left
		t.Fatalf("events left: %d, want 11", n)
	}
	if n := e.count("SELECT count(*) FROM latency_histograms WHERE bucket_start < now() - interval '48 hours'"); n != 1 {
		t.Fatalf("old histogram rows left: %d, want 1 (the hourly one within 30 days)", n)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'"); n != 1 {
		t.Fatal("a dead letter was deleted")
	}
}

// TestRetentionCatchesUp: when one pass cannot delete everything past its
// retention within its budget, the next comes after a pause as long as the
// pass, not a whole period later, until retention has caught up.
func TestRetentionCatchesUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 4000 // eight batches of 500; a pass of a few ms deletes one or two
	e.pastRetention(n)
	metrics := NewMetrics(prometheus.NewRegistry())
	w := e.worker(func(c *Config) {
		c.Retention.Every = time.Hour // without catching up, one pass in the whole test
		c.Retention.Budget = 3 * time.Millisecond
		c.Retention.Batch = 500
		c.Metrics = metrics
	})
	e.run(w)
	e.waitFor("retention to catch up", func() bool {
		return e.count("SELECT count(*) FROM deliveries") == 0 && e.count("SELECT count(*) FROM events") == 0
	})
	// The metrics say so: passes behind, then one caught up, every row counted.
	e.waitFor("a pass that caught up", func() bool {
		return counterValue(t, metrics.retainPasses.WithLabelValues("caught_up")) >= 1
	})
	if behind := counterValue(t, metrics.retainPasses.WithLabelValues("behind")); behind < 2 {
		t.Fatalf("%v passes behind, want at least 2 for %d rows in 500-row batches and a 3-ms budget", behind, n)
	}
	for _, table := range []string{"deliveries", "events"} {
		if got := counterValue(t, metrics.retainDeleted.WithLabelValues(table)); got != n {
			t.Fatalf("deleted %s counted %v, want %d", table, got, n)
		}
	}
}

// TestRetentionLogsOncePerPass: a pass logs each kind of row it deleted
// once, with its total, however many batches it took (at 3,000 deliveries
// a second a pass takes 36 batches, and logged a line for each).
func TestRetentionLogsOncePerPass(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	old := e.pastRetention(1200)
	e.oldUndelivered(700, old)
	var logs bytes.Buffer
	w := e.worker(func(c *Config) {
		c.Retention.Batch = 500
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string][]float64{}
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Msg, What string
			Rows      float64
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec.Msg == "retention deleted rows" {
			got[rec.What] = append(got[rec.What], rec.Rows)
		}
	}
	want := map[string][]float64{
		"delivered deliveries outside the span partitions": {1200},
		"events with their last delivery":                  {1200},
		"events without deliveries":                        {700},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("logged %v, want %v\n%s", got, want, logs.String())
	}
}

// TestRetentionStepsAllMove: a pass whose budget the delivered deliveries
// use up still deletes a batch of each later step, here the events that
// never had a delivery.
func TestRetentionStepsAllMove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	old := e.pastRetention(1200)
	// Older than the rest, so the sweep's first batch reaches them.
	e.oldUndelivered(10, old.Add(-time.Hour))
	w := e.worker(func(c *Config) { c.Retention.Budget = time.Nanosecond; c.Retention.Batch = 500 })
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM deliveries"); n != 1200-500 {
		t.Fatalf("%d deliveries left after one pass, want one batch gone", n)
	}
	if n := e.count("SELECT count(*) FROM events WHERE type = 'unsubscribed'"); n != 0 {
		t.Fatalf("%d events without deliveries left: the sweep did not run", n)
	}
}

// TestRetentionDeletesExpiredPortalAccess: portal sessions past their
// limits and sign-in links long expired are deleted; live ones, and a link
// a kept session came from, stay.
func TestRetentionDeletesExpiredPortalAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	w := e.worker(nil)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO portal_links (partner_id, token_hash, created_by, expires_at) VALUES
		($1, 'old-unused', 'test', now() - interval '3 days'),
		($1, 'old-used', 'test', now() - interval '3 days'),
		($1, 'live', 'test', now() + interval '1 hour')`, e.pid)
	exec(`INSERT INTO portal_sessions (token_hash, partner_id, link_id, csrf_token, created_at, last_seen_at) VALUES
		('idle', $1, NULL, 'x', now() - interval '2 days', now() - interval '2 days'),
		('ancient', $1, NULL, 'x', now() - interval '9 days', now()),
		('kept', $1, (SELECT id FROM portal_links WHERE token_hash = 'old-used'), 'x', now(), now())`, e.pid)
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	var sessions, links []string
	for _, q := range []struct {
		sql string
		dst *[]string
	}{{"SELECT token_hash FROM portal_sessions ORDER BY 1", &sessions}, {"SELECT token_hash FROM portal_links ORDER BY 1", &links}} {
		rows, err := e.pool.Query(ctx, q.sql)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			*q.dst = append(*q.dst, s)
		}
		rows.Close()
	}
	if !slices.Equal(sessions, []string{"kept"}) || !slices.Equal(links, []string{"live", "old-used"}) {
		t.Fatalf("sessions left %v, links left %v", sessions, links)
	}
}

// TestRetentionEventsGoWithTheirLastDelivery: an old event goes with its
// last delivered delivery, one that never had a delivery goes by the
// sweep, one kept for its dead letter stays; and the sweep's cursor moves
// past what it scanned, so the next pass does not rescan the kept event.
func TestRetentionEventsGoWithTheirLastDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})
	old := time.Now().Add(-9 * 24 * time.Hour)
	ids := e.eventsAt(3, "order.paid", `{}`, old)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE events SET created_at = $1::timestamptz + (SELECT count(*) FROM events e2 WHERE e2.id < events.id) * interval '1 second'`, old)
	exec(`UPDATE deliveries SET status = 'delivered', delivered_at = $1 WHERE event_id = $2`, old, ids[0])
	exec(`UPDATE deliveries SET status = 'dead', dead_at = $1 WHERE event_id = $2`, old, ids[1])
	exec(`DELETE FROM deliveries WHERE event_id = $1`, ids[2]) // as if a filter took none
	w := e.worker(nil)
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := e.pool.Query(ctx, `SELECT id::text FROM events ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		left = append(left, s)
	}
	rows.Close()
	if !slices.Equal(left, []string{ids[1].String()}) {
		t.Fatalf("events left %v, want only the dead letter's %s", left, ids[1])
	}
	if w.house.sweep.createdAt.IsZero() {
		t.Fatal("the sweep's cursor did not move")
	}
	var keptAt time.Time
	if err := e.pool.QueryRow(ctx, `SELECT created_at FROM events WHERE id = $1`, ids[1]).Scan(&keptAt); err != nil {
		t.Fatal(err)
	}
	if w.house.sweep.createdAt.Before(keptAt) {
		t.Fatalf("the sweep stopped at %s, before the kept event at %s", w.house.sweep.createdAt, keptAt)
	}
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRetentionOneReplicaAtATime: a pass runs only while it holds the
// retention lock. While another session (another replica's pass) holds it,
// a replica's turn is skipped and deletes nothing, and RetainNow waits for
// it; a pass that ends releases it.
func TestRetentionOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.pastRetention(100)
	w := e.worker(nil)
	other, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock(7270736904)"); err != nil {
		t.Fatal(err)
	}
	if res, err := w.house.retain(ctx, false); err != nil || res != retainSkipped {
		t.Fatalf("pass while another holds the lock: %v, %v; want skipped", res, err)
	}
	if n := e.count("SELECT count(*) FROM deliveries"); n != 100 {
		t.Fatalf("a skipped pass deleted %d deliveries", 100-n)
	}

	// RetainNow waits for the lock rather than skip.
	done := make(chan error, 1)
	go func() { done <- w.RetainNow(ctx) }()
	e.waitFor("RetainNow waiting for the lock", func() bool {
		return e.count("SELECT count(*) FROM pg_locks WHERE "+inThisDatabase+" AND locktype = 'advisory' AND NOT granted") == 1
	})
	if n := e.count("SELECT count(*) FROM deliveries"); n != 100 {
		t.Fatalf("a pass that waits for the lock deleted %d deliveries before it had it", 100-n)
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock(7270736904)"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM deliveries"); n != 0 {
		t.Fatalf("%d deliveries left after the pass", n)
	}

	// The pass let go of the lock: the next takes it, and so could another
	// session.
	if res, err := w.house.retain(ctx, false); err != nil || res != retainCaughtUp {
		t.Fatalf("pass after a pass: %v, %v; want caught up", res, err)
	}
	var ok bool
	if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock(7270736904)").Scan(&ok); err != nil || !ok {
		t.Fatalf("lock after the passes: %v, %v; want free", ok, err)
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock(7270736904)"); err != nil {
		t.Fatal(err)
	}
}

// pastRetention adds an endpoint and n deliveries to it delivered eight
// days ago, past the default retention, and returns when.
func (e *env) pastRetention(n int) time.Time {
	e.t.Helper()
	epID, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:9/"})
	old := time.Now().Add(-8 * 24 * time.Hour)
	e.oldDelivered(epID, n, old, 0)
	return old
}

// oldUndelivered adds n events of type "unsubscribed" that no delivery was
// made for, all created at.
func (e *env) oldUndelivered(n int, at time.Time) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO events (id, type, payload, created_at)
		SELECT `+v7AtSQL("$1")+`, 'unsubscribed', '{}', $1 FROM generate_series(1, $2)`, at, n); err != nil {
		e.t.Fatal(err)
	}
}

// oldDelivered adds n deliveries to endpoint epID, each with its own
// event, all created at: the last dead of them dead letters (dead at,
// never delivered), the others delivered at. No span partition of
// deliveries_delivered is that old: the delivered are in its default
// partition.
func (e *env) oldDelivered(epID int64, n int, at time.Time, dead int) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `
		WITH ev AS (
			INSERT INTO events (id, type, payload, created_at)
			SELECT `+v7AtSQL("$2")+`, 'order.created', '{}', $2 FROM generate_series(1, $3)
			RETURNING id),
		numbered AS (SELECT id, row_number() OVER () > $3 - $4 AS dead FROM ev)
		INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, delivered_at, dead_at, created_at)
		SELECT id, $1, CASE WHEN dead THEN 'dead' ELSE 'delivered' END, 1, 5,
		       CASE WHEN dead THEN NULL ELSE $2 END, CASE WHEN dead THEN $2 END, $2
		FROM numbered`, epID, at, n, dead); err != nil {
		e.t.Fatal(err)
	}
}

// v7AtSQL is an SQL expression for a random UUID whose first 48 bits are
// the time of the timestamptz expression at, in Unix milliseconds, as in a
// UUIDv7 made at that time: an event id of then.
func v7AtSQL(at string) string {
	return "encode(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch FROM " + at +
		"::timestamptz) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid"
}
