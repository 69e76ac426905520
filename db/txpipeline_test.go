package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestTxPipeline: BEGIN travels with the first batch and COMMIT with the
// one after CommitWithNextBatch; a failure anywhere leaves nothing behind
// and the connection reusable, and a COMMIT that the failure skipped is
// reported, not assumed.
func TestTxPipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	partners := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM partners").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	batch := func(names ...any) *pgx.Batch {
		b := &pgx.Batch{}
		for _, n := range names {
			b.Queue("INSERT INTO partners (name) VALUES ($1)", n)
		}
		return b
	}
	run := func(first, second *pgx.Batch) (*db.TxPipeline, *pgxpool.Conn) {
		t.Helper()
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := db.NewTxPipeline(conn)
		_ = tx.SendBatch(ctx, first).Close()
		if tx.Err() == nil {
			tx.CommitWithNextBatch()
			_ = tx.SendBatch(ctx, second).Close()
		}
		if !tx.Committed() {
			tx.Rollback(ctx)
		}
		if s := conn.Conn().PgConn().TxStatus(); s != 'I' {
			t.Fatalf("connection left in transaction status %q", s)
		}
		conn.Release()
		return tx, conn
	}

	tx, _ := run(batch("a", "b"), batch("c"))
	if tx.Err() != nil || !tx.Committed() || partners() != 3 {
		t.Fatalf("committed %v, err %v, %d partners", tx.Committed(), tx.Err(), partners())
	}

	tx, _ = run(batch("d", nil), batch("e"))
	if tx.Err() == nil || tx.Committed() || partners() != 3 {
		t.Fatalf("failed first batch: committed %v, err %v, %d partners", tx.Committed(), tx.Err(), partners())
	}
	tx, _ = run(batch("f"), batch("g", "a"))
	if tx.Err() == nil || tx.Committed() || partners() != 3 {
		t.Fatalf("failed second batch: committed %v, err %v, %d partners", tx.Committed(), tx.Err(), partners())
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("Commit after a failed batch reported success")
	}
}

// TestNotifyHeldBackWhenQueueCrowded: the wake-up NOTIFYs (EventNotify's,
// and the one DeliveryFanOut sends with the endpoints it queued for) are
// sent only
// while PostgreSQL's NOTIFY queue is emptier than the limit they are given
// (db.NotifyQueueLimit in hookline), so a listener that stopped reading
// cannot make every ingest fail at COMMIT. A queue this empty is above a
// limit of 0 and below db.NotifyQueueLimit; the transactions commit either
// way.
func TestNotifyHeldBackWhenQueueCrowded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	listener := listen(t, pool)
	if _, err := pool.Exec(ctx, `WITH p AS (INSERT INTO partners (name) VALUES ('owner') RETURNING id)
		INSERT INTO endpoints (partner_id, name, kind, url) SELECT id, 'e', 'webhook', 'http://127.0.0.1:1/' FROM p`); err != nil {
		t.Fatal(err)
	}
	var usage float64
	if err := pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage); err != nil || usage >= db.NotifyQueueLimit {
		t.Fatalf("queue usage %v, %v", usage, err)
	}
	notified := func(limit float64, send func(*db.Queries, float64) error) bool {
		t.Helper()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return send(db.New(tx), limit) }); err != nil {
			t.Fatal(err)
		}
		wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := listener.Conn().WaitForNotification(wait)
		return err == nil
	}
	everywhere := func(q *db.Queries, limit float64) error { return q.EventNotify(ctx, limit) }
	named := func(q *db.Queries, limit float64) error {
		fan := db.FanOut([]db.FanOutEvent{{ID: uuid.New(), Type: "t"}}, true)
		fan[0].WakeUnder = limit
		var err error
		q.DeliveryFanOut(ctx, fan).Query(func(_ int, rows []db.DeliveryFanOutRow, e error) {
			if err = e; err == nil && len(rows) != 1 {
				err = fmt.Errorf("fan-out queued %d deliveries, want 1", len(rows))
			}
		})
		return err
	}
	for name, send := range map[string]func(*db.Queries, float64) error{"EventNotify": everywhere, "DeliveryFanOut": named} {
		if notified(0, send) {
			t.Errorf("%s notified with the queue over its limit", name)
		}
		if !notified(db.NotifyQueueLimit, send) {
			t.Errorf("%s did not notify with the queue under its limit", name)
		}
	}
}

// listen is a connection of pool's listening for the workers' wake-ups,
// released when the test ends.
func listen(t *testing.T, pool *pgxpool.Pool) *pgxpool.Conn {
	t.Helper()
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(context.Background(), "LISTEN hookline_deliveries"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestTxPipelineFanOutSettings: a batch that fans events out runs with the
// fan-out's setting (FanOutSettings: no sequential scan of endpoints), set
// for its transaction only; a batch without the fan-out does not.
func TestTxPipelineFanOutSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	seqscan := func(q db.DBTX) string {
		t.Helper()
		var v string
		if err := q.QueryRow(ctx, "SHOW enable_seqscan").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tx := db.NewTxPipeline(conn)
	_ = tx.SendBatch(ctx, &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{{SQL: "SELECT 1"}}}).Close()
	if got := seqscan(tx); tx.Err() != nil || got != "on" {
		t.Fatalf("a batch without the fan-out: enable_seqscan %s (%v)", got, tx.Err())
	}
	var ferr error
	db.New(tx).DeliveryFanOut(ctx, db.FanOut([]db.FanOutEvent{{ID: uuid.New(), Type: "none"}}, false)).
		Query(func(_ int, _ []db.DeliveryFanOutRow, err error) { ferr = err })
	if got := seqscan(tx); ferr != nil || tx.Err() != nil || got != "off" {
		t.Fatalf("the fan-out's transaction: enable_seqscan %s (%v, %v)", got, ferr, tx.Err())
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := seqscan(conn); got != "on" {
		t.Fatalf("after the fan-out's transaction: enable_seqscan %s", got)
	}
}
