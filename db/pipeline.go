package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pipeline is a DBTX that saves round trips on the hot path. Exec only
// queues its statement; the next Query sends everything queued plus itself
// as one extended-protocol pipeline ending in a single Sync. PostgreSQL runs
// such a pipeline as one implicit transaction, each statement with its own
// snapshot (as in an explicit READ COMMITTED transaction), and commits it at
// the Sync. So
//
//	q := db.New(db.NewPipeline(c))
//	q.ClaimSettings(ctx)                   // queued
//	rows, err := q.DeliveryClaim(ctx, arg) // settings + claim + commit: one round trip
//
// costs one round trip where BEGIN, settings, claim, COMMIT cost four. Under
// full load each round trip waits for a busy CPU on both sides, so this is
// worth more than it looks on an idle machine.
//
// An error in any statement rolls the whole pipeline back and is returned
// by Query (or by the rows' Err). Exec's own result is always empty.
type Pipeline struct {
	conn  BatchSender
	batch *pgx.Batch
}

// BatchSender is a connection a Pipeline runs on: a *pgxpool.Conn, or a
// *pgx.Conn held apart from the pool (the worker's liveness session).
type BatchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewPipeline runs statements on conn as described above. TxPipeline is its
// counterpart for a transaction that needs more than one round trip.
func NewPipeline(conn BatchSender) *Pipeline { return &Pipeline{conn: conn} }

var errPipelineUnsupported = errors.New("db: Pipeline supports only queued Exec followed by Query")

func (p *Pipeline) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.batch == nil {
		p.batch = &pgx.Batch{}
	}
	p.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (p *Pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	// The batch stays with its results (pgx reads them against it); the
	// next Exec starts a new one.
	b := p.batch
	if b == nil {
		b = &pgx.Batch{}
	}
	p.batch = nil
	queued := b.Len()
	b.Queue(sql, args...)
	br := p.conn.SendBatch(ctx, b)
	for range queued {
		if _, err := br.Exec(); err != nil {
			return nil, errors.Join(err, br.Close())
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &pipelineRows{Rows: rows, br: br}, nil
}

func (p *Pipeline) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{errPipelineUnsupported}
}

func (p *Pipeline) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errPipelineUnsupported
}

func (p *Pipeline) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return failedBatch{errPipelineUnsupported}
}

// pipelineRows ends the pipeline when its rows are exhausted, so an error
// reported at commit (after the last row) reaches the caller through Err.
type pipelineRows struct {
	pgx.Rows
	br       pgx.BatchResults
	closed   bool
	closeErr error
}

func (r *pipelineRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *pipelineRows) finish() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.closeErr = r.br.Close()
}

func (r *pipelineRows) Close() { r.finish() }

func (r *pipelineRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.closeErr
}
