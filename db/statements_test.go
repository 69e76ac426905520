package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestStatements: sqlc's statements queued with db.Statements travel in
// one round trip, with BEGIN and COMMIT through a TxPipeline; each one's
// rows reach its function in order, and a failing statement stops the
// batch, commits nothing and is the error Send returns.
func TestStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, count := dbtest.CountedPool(t, dbtest.URL(t))
	q := db.New(pool)

	// A connection still held when a check fails would keep pool.Close
	// waiting; Release a second time does nothing.
	acquire := func() *pgxpool.Conn {
		t.Helper()
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Release)
		return c
	}
	conn := acquire()
	tx := db.NewTxPipeline(conn)
	var (
		s       db.Statements
		created db.Partner
		listed  []db.PartnerListRow
	)
	s.Query(func(q *db.Queries) { _, _ = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "Acme"}) }, func(r pgx.Rows) (err error) {
		created, err = pgx.CollectExactlyOneRow(r, pgx.RowToStructByPos[db.Partner])
		return err
	})
	s.Exec(func(q *db.Queries) { _, _ = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "Globex"}) })
	s.Query(func(q *db.Queries) { _, _ = q.PartnerList(ctx) }, func(r pgx.Rows) (err error) {
		listed, err = pgx.CollectRows(r, pgx.RowToStructByPos[db.PartnerListRow])
		return err
	})
	if s.Len() != 3 {
		t.Fatalf("%d statements queued, want 3", s.Len())
	}
	statements, batches := count.Counts()
	tx.CommitWithNextBatch()
	if err := s.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	st, b := count.Counts()
	if st, b := st-statements, b-batches; st != 0 || b != 1 {
		t.Fatalf("sent as %d statements and %d batches, want 0 and 1", st, b)
	}
	if !tx.Committed() || s.Len() != 0 {
		t.Fatalf("committed %v, %d statements left", tx.Committed(), s.Len())
	}
	conn.Release()
	if created.Name != "Acme" || created.ID == 0 {
		t.Fatalf("created %+v", created)
	}
	if len(listed) != 2 || listed[0].Name != "Acme" || listed[1].Name != "Globex" {
		t.Fatalf("listed %+v, want Acme and Globex", listed)
	}

	// A duplicate name fails the second statement: the first is rolled
	// back with it, the third never runs.
	conn = acquire()
	tx = db.NewTxPipeline(conn)
	ran := false
	s.Exec(func(q *db.Queries) { _, _ = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "Initech"}) })
	s.Exec(func(q *db.Queries) { _, _ = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "acme"}) })
	s.Query(func(q *db.Queries) { _, _ = q.PartnerList(ctx) }, func(pgx.Rows) error { ran = true; return nil })
	tx.CommitWithNextBatch()
	err := s.Send(ctx, tx)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("send: %v, want the duplicate's 23505", err)
	}
	if ran || tx.Committed() {
		t.Fatalf("after the failure: the list ran %v, committed %v", ran, tx.Committed())
	}
	tx.Rollback(ctx)
	conn.Release()
	if got, err := q.PartnerList(ctx); err != nil || len(got) != 2 {
		t.Fatalf("partners after the failed batch: %d, %v; want the 2 committed", len(got), err)
	}

	// What cannot join a batch is refused when queued.
	for name, call := range map[string]func(*db.Queries){
		"a COPY":       func(q *db.Queries) { _, _ = q.AttemptInsert(ctx, nil) },
		"no statement": func(*db.Queries) {},
		"two":          func(q *db.Queries) { _, _ = q.PartnerList(ctx); _, _ = q.PartnerList(ctx) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "db.Statements") {
					t.Errorf("%s: recovered %v, want a db.Statements panic", name, r)
				}
			}()
			s.Exec(call)
		}()
	}
}
