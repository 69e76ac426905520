package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TxPipeline is a DBTX for one transaction that saves round trips on the
// ingest path: BEGIN travels with the first statement or batch sent
// through it, CommitWithNextBatch makes the COMMIT travel with the next
// batch, and EndpointFiltersWithNextBatch makes the filters' read travel
// with the first. So an ingest (read the filters, insert the events, fan
// them out and NOTIFY, which DeliveryFanOut does in one statement) costs
// two round trips where the filters, BEGIN, the inserts, the fan-out and
// COMMIT cost five: each is a wake-up of another process, which on a busy
// machine is most of an event's wait.
//
// A batch's statements run in order until one fails; PostgreSQL then skips
// the rest of the batch, COMMIT included, and the transaction stays open
// and failed until Rollback. Errors reach the caller as sqlc's batch
// results report them; Err has the first one, COMMIT's included, which
// sqlc's results drop when they close the batch.
type TxPipeline struct {
	conn      DBTX
	begun     bool
	commitNow bool // COMMIT goes with the next batch
	filters   *[]EndpointFiltersRow
	committed bool
	err       error
}

// EndpointFiltersWithNextBatch makes the next batch sent through t read
// EndpointFilters into *out first (after BEGIN, before its own
// statements): ingest reads the filters in its transaction without a round
// trip of their own. *out is filled before that batch's results are handed
// back; should the read fail, so does the batch.
func (t *TxPipeline) EndpointFiltersWithNextBatch(out *[]EndpointFiltersRow) {
	t.filters = out
}

// NewTxPipeline starts (lazily) a transaction on conn, which must be a
// single connection (a *pgxpool.Conn or *pgx.Conn), not a pool.
func NewTxPipeline(conn DBTX) *TxPipeline { return &TxPipeline{conn: conn} }

// CommitWithNextBatch appends COMMIT to the next batch sent through t;
// once that batch's results are closed without an error, t is committed.
func (t *TxPipeline) CommitWithNextBatch() { t.commitNow = true }

// Committed reports whether a batch carried the COMMIT and it succeeded.
func (t *TxPipeline) Committed() bool { return t.committed }

// Err is the first error a batch sent through t reported on closing.
func (t *TxPipeline) Err() error { return t.err }

// Commit commits the transaction if no batch has, in one round trip.
func (t *TxPipeline) Commit(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.committed || !t.begun {
		return nil
	}
	if _, err := t.conn.Exec(ctx, "COMMIT"); err != nil {
		return err
	}
	t.committed = true
	return nil
}

// Rollback ends a transaction that did not commit; a connection whose
// transaction is still open is not reused by the pool in any case.
func (t *TxPipeline) Rollback(ctx context.Context) {
	if t.begun && !t.committed {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
}

func (t *TxPipeline) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.conn.Exec(ctx, "BEGIN")
	return err
}

func (t *TxPipeline) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *TxPipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *TxPipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *TxPipeline) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// SendBatch sends b with BEGIN before it (the first time) and COMMIT
// after it (when asked), in one round trip. A batch that fans events out
// (DeliveryFanOut) has the fan-out's setting (FanOutSettings) before it.
func (t *TxPipeline) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	out := &pgx.Batch{}
	begin := !t.begun
	if begin {
		out.Queue("BEGIN")
		t.begun = true
	}
	fanOut := false
	filters := t.filters
	if filters != nil {
		out.Queue(endpointFilters)
		t.filters = nil
	}
	for _, q := range b.QueuedQueries {
		if q.SQL == deliveryFanOut {
			out.Queue(fanOutSettings)
			fanOut = true
			break
		}
	}
	out.QueuedQueries = append(out.QueuedQueries, b.QueuedQueries...)
	commit := t.commitNow
	if commit {
		out.Queue("COMMIT")
		t.commitNow = false
	}
	br := t.conn.SendBatch(ctx, out)
	fail := func(err error) pgx.BatchResults {
		t.err = errors.Join(err, br.Close())
		return failedBatch{t.err}
	}
	if begin {
		if _, err := br.Exec(); err != nil {
			return fail(err)
		}
	}
	if filters != nil {
		rows, err := br.Query()
		if err == nil {
			*filters, err = pgx.CollectRows(rows, pgx.RowToStructByPos[EndpointFiltersRow])
		}
		if err != nil {
			return fail(fmt.Errorf("read endpoint filters: %w", err))
		}
	}
	if fanOut {
		if _, err := br.Exec(); err != nil {
			return fail(fmt.Errorf("fan-out settings: %w", err))
		}
	}
	return &pipelinedResults{BatchResults: br, tx: t, commit: commit}
}

// pipelinedResults records, on Close, the batch's first error and whether
// the COMMIT it carried took effect.
type pipelinedResults struct {
	pgx.BatchResults
	tx     *TxPipeline
	commit bool
	closed bool
}

func (r *pipelinedResults) Close() error {
	if r.closed {
		return r.tx.err
	}
	r.closed = true
	err := r.BatchResults.Close()
	if err != nil && r.tx.err == nil {
		r.tx.err = err
	}
	if err == nil && r.commit {
		r.tx.committed = true
	}
	return err
}

// failedBatch answers every call with the error that stopped the batch.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return errRow{f.err} }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }

// errRow is a Row whose Scan returns err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// NotifyQueueLimit is how full PostgreSQL's NOTIFY queue (8 GB, shared by
// the whole cluster) may be before hookline stops sending its wake-up
// NOTIFYs (EventNotify, DeliveryFanOut's). The queue fills only while
// a session listening somewhere in the cluster stops reading (a worker
// process paused, a client idle in a transaction), and a transaction that
// notifies into a full queue fails at COMMIT: every ingest would fail.
// Without NOTIFYs the workers find new deliveries by polling (every
// second), later but surely; the workers log a warning and /metrics
// reports hookline_notify_queue_usage.
const NotifyQueueLimit = 0.5
