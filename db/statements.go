package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Statements gathers sqlc's statements into one batch, sent in one round
// trip: through a TxPipeline, with its BEGIN before the first and its
// COMMIT after the last when asked for, or through any BatchSender. The
// completion flush uses it to record a batch of results in two round
// trips instead of seven (worker/complete.go).
//
// A statement is queued by calling its generated function on the Queries
// handed to call: the call records the statement's SQL and arguments, in
// the order sqlc wrote them, instead of running it, and returns an error
// that call ignores. Its rows are handed to rows as the batch is read.
//
//	var s db.Statements
//	s.Query(func(q *db.Queries) { q.DeliveryComplete(ctx, done) },
//		func(r pgx.Rows) (err error) { ids, err = pgx.CollectRows(r, pgx.RowTo[int64]); return err })
//	s.Exec(func(q *db.Queries) { q.AttemptInsertRows(ctx, attempts) })
//	err := s.Send(ctx, tx)
//
// A COPY (:copyfrom) or a batch (:batch…) cannot be queued; calling one
// panics, as does a call that runs no statement or more than one.
type Statements struct {
	b pgx.Batch
}

// Query queues the statement call runs; rows reads its rows, which are
// closed after it returns.
func (s *Statements) Query(call func(*Queries), rows func(pgx.Rows) error) {
	s.queue(call).Query(rows)
}

// Exec queues the statement call runs, whose rows (if any) are discarded.
func (s *Statements) Exec(call func(*Queries)) {
	s.queue(call).Exec(func(pgconn.CommandTag) error { return nil })
}

// Len is the number of statements queued.
func (s *Statements) Len() int { return s.b.Len() }

// Send sends the statements queued through conn in one round trip and
// reads every result. The error is the first statement's that failed, or
// the first a rows function returned; PostgreSQL runs none of the
// statements after a failed one. The Statements are empty afterwards.
func (s *Statements) Send(ctx context.Context, conn BatchSender) error {
	b := s.b
	s.b = pgx.Batch{}
	if b.Len() == 0 {
		return nil
	}
	return conn.SendBatch(ctx, &b).Close()
}

func (s *Statements) queue(call func(*Queries)) *pgx.QueuedQuery {
	var r recorder
	call(New(&r))
	switch {
	case r.unsupported != "":
		panic("db.Statements: " + r.unsupported + " cannot join a batch")
	case r.n != 1:
		panic(fmt.Sprintf("db.Statements: the call ran %d statements, want 1", r.n))
	}
	return s.b.Queue(r.sql, r.args...)
}

// errQueued is what a statement run on a recorder returns: it was
// recorded, not run.
var errQueued = errors.New("db: statement queued, not run")

// recorder is the DBTX Statements calls sqlc's functions on.
type recorder struct {
	sql         string
	args        []any
	n           int
	unsupported string
}

func (r *recorder) record(sql string, args []any) {
	r.sql, r.args = sql, args
	r.n++
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.record(sql, args)
	return pgconn.CommandTag{}, errQueued
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.record(sql, args)
	return nil, errQueued
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.record(sql, args)
	return errRow{errQueued}
}

func (r *recorder) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	r.unsupported = "a COPY"
	return 0, errQueued
}

func (r *recorder) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	r.unsupported = "a batch"
	return failedBatch{errQueued}
}
