package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestDeliveredPartitions: retention keeps partitions of
// deliveries_delivered from a span before now to the time ahead, made once
// by replicas at once, each the deliveries of one span of event times;
// a delivery recorded as delivered leaves the queue for its event's
// partition, and a resend brings it back; a delivery of an event older
// than every partition goes to the default partition and is deleted there
// by delivered_at; once a span is wholly past the retention its partition
// is dropped, with everything in it, and the events go with it; dead
// letters stay.
func TestDeliveredPartitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const retention = time.Hour
	w, clk, span := e.spanWorker(retention)
	if span != 5*time.Minute {
		t.Fatalf("span %v for an hour's retention, want 5m", span)
	}
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})

	// Made before any partition covers its time: the default partition
	// keeps its delivery, and the first pass moves it into its span.
	early := e.eventsAt(1, "order.created", `{}`, clk.Now())[0]
	markDelivered(t, e, early)
	if got := partitionOf(t, e, early); got != "deliveries_delivered_default" {
		t.Fatalf("delivered before the partitions were made: in %s", got)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs { // replicas at once
		wg.Go(func() { _, errs[i] = w.house.keepDeliveredPartitions(ctx, clk.Now()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	have, err := w.house.spanPartitions(ctx, "deliveries_delivered")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range have {
		from, to := uuidTime(r.from), uuidTime(r.to)
		if i > 0 && r.from != have[i-1].to {
			t.Fatalf("partition %s starts at %v, the one before ends at %v", r.name, from, uuidTime(have[i-1].to))
		}
		if !to.Equal(spanEnd(from, span)) || r.name != deliveredPartitionName(from) {
			t.Fatalf("partition %s covers [%v, %v), want one span of %v", r.name, from, to, span)
		}
	}
	if len(have) == 0 || uuidTime(have[0].from).After(clk.Now().Add(-span)) ||
		uuidTime(have[len(have)-1].to).Before(clk.Now().Add(deliveredAhead(span, w.cfg.Retention.Every))) {
		t.Fatalf("partitions %v do not cover a span before now to the time ahead", have)
	}
	if got := partitionOf(t, e, early); got == "deliveries_delivered_default" {
		t.Fatalf("the early delivery stayed in %s", got)
	}
	// The attempt log's partitions are still read as time ranges, beside
	// these ranges of UUIDs.
	if _, err := w.q.AttemptPartitionsBefore(ctx, clk.Now().Add(30*24*time.Hour)); err != nil {
		t.Fatalf("attempt partitions with delivered ones beside them: %v", err)
	}

	// Delivered: out of the queue, into its span. Resent: back.
	ids := e.eventsAt(3, "order.created", `{}`, clk.Now())
	markDelivered(t, e, ids...)
	want := deliveredPartitionName(spanEnd(clk.Now(), span).Add(-span))
	for _, id := range ids {
		if got := partitionOf(t, e, id); got != want {
			t.Fatalf("delivered: in %s, want %s", got, want)
		}
	}
	var resent int64
	if err := e.pool.QueryRow(ctx, "SELECT id FROM deliveries WHERE event_id = $1", ids[2]).Scan(&resent); err != nil {
		t.Fatal(err)
	}
	if r, err := e.q.DeliveryResend(ctx, resent); err != nil || r.Status != "pending" {
		t.Fatalf("resend: %+v, %v", r, err)
	}
	if got := partitionOf(t, e, ids[2]); got != "deliveries_queue" {
		t.Fatalf("resent: in %s, want deliveries_queue", got)
	}
	dead := e.eventsAt(1, "order.created", `{}`, clk.Now())[0]
	if _, err := e.pool.Exec(ctx, "UPDATE deliveries SET status = 'dead', dead_at = now() WHERE event_id = $1", dead); err != nil {
		t.Fatal(err)
	}
	// An event older than every partition, delivered after long retries.
	late := e.eventsAt(1, "order.created", `{}`, clk.Now().Add(-2*retention))[0]
	markDelivered(t, e, late)
	if got := partitionOf(t, e, late); got != "deliveries_delivered_default" {
		t.Fatalf("an old event's delivery in %s, want the default partition", got)
	}

	// Past the retention (by the worker's clock): the spans go whole, the
	// late delivery goes by its delivered_at, the queue stays.
	clk.Advance(retention + 2*span)
	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := w.house.spanPartitions(ctx, "deliveries_delivered")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range have {
		if slices.ContainsFunc(after, func(a spanPartition) bool { return a.name == r.name }) &&
			!uuidTime(r.to).After(clk.Now().Add(-retention)) {
			t.Errorf("partition %s, wholly past the retention, was kept", r.name)
		}
	}
	if len(after) > maxDeliveredPartitions+int(deliveredAhead(span, w.cfg.Retention.Every)/span)+2 {
		t.Errorf("%d partitions for %v of retention in spans of %v", len(after), retention, span)
	}
	left := e.uuids("SELECT event_id FROM deliveries ORDER BY event_id")
	if wantLeft := sorted(ids[2], dead); !slices.Equal(left, wantLeft) {
		t.Fatalf("deliveries left for events %v, want the resent one's and the dead letter's %v", left, wantLeft)
	}
	if n := e.count("SELECT count(*) FROM events WHERE id = ANY($1)", append(ids[:2:2], early, late)); n != 0 {
		t.Fatalf("%d events of dropped deliveries kept", n)
	}
}

// markDelivered records the deliveries of events as delivered now, as a
// completion does.
func markDelivered(t *testing.T, e *env, events ...uuid.UUID) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1
		WHERE event_id = ANY($1)`, events); err != nil {
		t.Fatal(err)
	}
}

// partitionOf is the partition holding the delivery of an event.
func partitionOf(t *testing.T, e *env, event uuid.UUID) string {
	t.Helper()
	var s string
	if err := e.pool.QueryRow(context.Background(), "SELECT tableoid::regclass::text FROM deliveries WHERE event_id = $1", event).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeliveredRacingANewPartition: a completion that records a delivery
// as delivered while the partition of its event's span is being made
// waits, and its row lands in the new partition: PostgreSQL routes it
// after the wait, or refuses it for the default partition's new bounds,
// which the completion counts as worth retrying, and the retry lands
// there.
func TestDeliveredRacingANewPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})
	span := deliveredPartitionSpan(DefaultRetention().Delivered)
	from := spanEnd(time.Now(), span).Add(5 * span) // beyond the spans made ahead
	event := e.eventsAt(1, "order.created", `{}`, from.Add(time.Minute))[0]
	deliver := func() (string, error) {
		var where string
		err := e.pool.QueryRow(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1
			WHERE event_id = $1 AND status <> 'delivered' RETURNING tableoid::regclass::text`, event).Scan(&where)
		return where, err
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE deliveries_delivered_default IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		where string
		err   error
	}
	raced := make(chan result, 1)
	go func() { where, err := deliver(); raced <- result{where, err} }()
	e.waitFor("the completion to wait for the default partition", func() bool {
		return e.count(`SELECT count(*) FROM pg_locks WHERE `+inThisDatabase+` AND NOT granted AND relation = 'deliveries_delivered_default'::regclass`) == 1
	})
	if err := makePartition(ctx, tx, deliveredPartitioned, deliveredPartitionName(from), UUIDAt(from).String(), UUIDAt(from.Add(span)).String()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-raced
	if r.err != nil {
		if !retryable(r.err) {
			t.Fatalf("the raced completion: %v; want it routed to the new partition, or a refusal the completion retries", r.err)
		}
		r.where, r.err = deliver()
	}
	if r.err != nil || r.where != deliveredPartitionName(from) {
		t.Fatalf("delivered: in %s, %v; want %s", r.where, r.err, deliveredPartitionName(from))
	}
}

// TestAttachPartitionsReplans: a statement a session planned while a
// partition was being attached reads the rows that go to the new
// partition once the attach has committed. PostgreSQL keeps such a plan
// without the new partition (the first case shows it still does); the
// worker's attach makes every session plan again.
func TestAttachPartitionsReplans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	w, clk, span := e.spanWorker(7 * 24 * time.Hour)
	e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})
	const events = 5
	for i, tc := range []struct {
		name   string
		attach func(context.Context, partitioned, func(pgx.Tx) error) error
		stale  bool // the reader's plan is expected to miss the new partition
	}{
		{"DDL alone", func(ctx context.Context, _ partitioned, fn func(pgx.Tx) error) error {
			return w.house.partitionDDL(ctx, fn)
		}, true},
		{"attachPartitions", w.house.attachPartitions, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := clk.Now().Add(time.Duration(i) * span)
			from := spanEnd(at, span).Add(-span)
			ids := e.eventsAt(events, "order.created", `{}`, at)
			reader, err := pgx.Connect(ctx, e.pool.Config().ConnConfig.ConnString())
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close(ctx)
			// As a statement PostgreSQL has chosen to keep one plan for
			// (from its sixth execution on, when that plan costs no more).
			if _, err := reader.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			const count = "SELECT count(*) FROM deliveries WHERE event_id = ANY($1) AND status = 'delivered'"
			planned := make(chan error, 1)
			err = tc.attach(ctx, deliveredPartitioned, func(tx pgx.Tx) error {
				if err := makePartition(ctx, tx, deliveredPartitioned, deliveredPartitionName(from), UUIDAt(from).String(), UUIDAt(from.Add(span)).String()); err != nil {
					return err
				}
				// The reader plans now, and waits for the default
				// partition until the attach commits.
				go func() {
					var n int
					planned <- reader.QueryRow(ctx, count, ids).Scan(&n)
				}()
				e.waitFor("the reader to wait for the attach", func() bool {
					var waiting bool
					if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)`,
						reader.PgConn().PID()).Scan(&waiting); err != nil {
						t.Fatal(err)
					}
					return waiting
				})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-planned; err != nil {
				t.Fatal(err)
			}
			markDelivered(t, e, ids...)
			if got := partitionOf(t, e, ids[0]); got != deliveredPartitionName(from) {
				t.Fatalf("delivered into %s, want the new partition", got)
			}
			var n int
			if err := reader.QueryRow(ctx, count, ids).Scan(&n); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.stale && n != 0:
				t.Logf("PostgreSQL planned the reader's statement again without help (%d rows): the case below no longer tells", n)
			case !tc.stale && n != events:
				t.Fatalf("the reader's kept statement counts %d delivered, want %d", n, events)
			}
		})
	}
}
