package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/tracing"
)

// completerConfig configures a completer; Worker.New fills it from
// Config and wires it to the other services; validate says what is
// missing.
type completerConfig struct {
	// Pool runs the completion transactions.
	Pool *pgxpool.Pool
	// WorkerID fences the completion of the breaker probes this worker
	// leased (lease_owner).
	WorkerID string
	// Results are the senders' outcomes: the completer records them until
	// the channel is closed.
	Results <-chan outcome
	// Recorded is told of every batch once its transaction has committed
	// (or it was given up on), with the results in it that could not be
	// recorded (lost): the claimer forgets the rest of the batch's
	// deliveries and looks at their endpoints again.
	Recorded func(batch, lost []outcome)
	// Pause holds an endpoint's sends until a time (a Retry-After), in
	// the claimer's rate limits.
	Pause func(endpointID int64, until time.Time)
	// Outbox is signalled when a batch queued operator notifications (a
	// 1-buffered channel the notifier reads).
	Outbox chan struct{}
	// FlushInterval and FlushSize bound how long and how many results wait
	// before one transaction; Flushers is how many batches may be recorded
	// at once.
	FlushInterval time.Duration
	FlushSize     int
	Flushers      int
	// LeaseMargin is how long a result that cannot be recorded keeps its
	// delivery from being claimed again (said in the log).
	LeaseMargin time.Duration
	Backoff     backoff.Policy
	Breaker     breaker.Policy
	Rand        backoff.Source // backoff jitter, shared by the flushers
	Logger      *slog.Logger
	Now         func() time.Time
	// DBNow is the "now" passed to SQL (nil: the database's clock; see
	// Worker.dbNow).
	DBNow func() *time.Time
	// Metrics and Tracer may be nil (no metrics, traces off).
	Metrics *Metrics
	Tracer  *tracing.Tracer
}

func (c completerConfig) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("completer: Pool is required")
	case c.WorkerID == "":
		return errors.New("completer: WorkerID is required")
	case c.Results == nil:
		return errors.New("completer: Results is required")
	case c.Recorded == nil, c.Pause == nil:
		return errors.New("completer: Recorded and Pause are required")
	case c.Outbox == nil:
		return errors.New("completer: Outbox is required")
	case c.FlushInterval <= 0, c.FlushSize <= 0, c.Flushers <= 0:
		return errors.New("completer: FlushInterval, FlushSize and Flushers must be positive")
	case c.Rand == nil:
		return errors.New("completer: Rand is required")
	case c.Logger == nil:
		return errors.New("completer: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("completer: Now and DBNow are required")
	}
	return nil
}

// completer records what the senders made of each delivery: it collects
// their outcomes into batches and records each batch in one transaction
// (flush, complete_flush.go): the delivery's next state, its attempt, its
// latency sample, the breaker and failure budget of its endpoint, and the
// notifications these caused. It is the last stop of a delivery's walk:
// nothing it does calls back into the claimer or the dispatcher except
// through Recorded, Pause and Outbox.
type completer struct {
	cfg     completerConfig
	pool    *pgxpool.Pool
	q       *db.Queries
	log     *slog.Logger
	now     func() time.Time
	dbNow   func() *time.Time
	backoff backoff.Policy
	breaker breaker.Policy
	metrics *Metrics
	rndMu   sync.Mutex // the flushers share rnd
	rnd     backoff.Source

	// shutdownDeadline (unix nanoseconds, 0 while running) bounds how long
	// the final flush retries against an unreachable database.
	shutdownDeadline atomic.Int64
	unrecorded       atomic.Int64 // results given up on (their deliveries are sent again)
}

func newCompleter(cfg completerConfig) (*completer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &completer{
		cfg: cfg, pool: cfg.Pool, q: db.New(cfg.Pool), log: cfg.Logger, now: cfg.Now, dbNow: cfg.DBNow,
		backoff: cfg.Backoff, breaker: cfg.Breaker, metrics: cfg.Metrics, rnd: cfg.Rand,
	}, nil
}

func (c *completer) pastShutdownDeadline() bool {
	d := c.shutdownDeadline.Load()
	return d != 0 && time.Now().UnixNano() > d
}

// stopBy bounds the retries of the last batches: past t, a batch the
// database does not take is given up on (its deliveries are sent again).
func (c *completer) stopBy(t time.Time) { c.shutdownDeadline.Store(t.UnixNano()) }

// Run collects outcomes into batches of up to FlushSize, closed
// after FlushInterval, and hands them to Flushers goroutines, each
// recording one batch per transaction. With two or more, one batch's
// statements run while another waits for its commit to reach disk. Batches
// of different flushers touch different deliveries; they meet only on
// endpoint_health rows that change, which every writer locks in endpoint
// order (see applyBreaker). When all
// flushers are busy and a batch is full, senders wait (backpressure). It
// returns after Results is closed and everything received is recorded.
//
// A batch's storage is FlushSize outcomes (about 200 KiB at the default
// 512), and at a steady rate a batch closes with a handful in it every few
// milliseconds: batches are reused once recorded, through spare, rather
// than made anew (they were a quarter of all the process allocated at
// 3,000 deliveries/s, and the garbage collector ran eight times a second).
func (c *completer) Run() {
	batches := make(chan []outcome)
	spare := make(chan []outcome, c.cfg.Flushers+1)
	var flushers sync.WaitGroup
	for range c.cfg.Flushers {
		flushers.Go(func() {
			for b := range batches {
				lost := c.flushWithRetry(b)
				// Only now, after the commit, may a claim read the
				// batch's deliveries again.
				c.cfg.Recorded(b, lost)
				clear(b) // no payload outlives its batch
				select {
				case spare <- b[:0]:
				default:
				}
			}
		})
	}
	defer flushers.Wait()
	defer close(batches)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch []outcome
	due := false // the batch's FlushInterval has passed
	in := c.cfg.Results
	for {
		var out chan []outcome
		if len(batch) > 0 && (due || len(batch) >= c.cfg.FlushSize || in == nil) {
			out = batches
		}
		var recv <-chan outcome = in
		if len(batch) >= c.cfg.FlushSize {
			recv = nil
		}
		if in == nil && len(batch) == 0 {
			return
		}
		select {
		case o, ok := <-recv:
			if !ok {
				in = nil
				continue
			}
			if len(batch) == 0 {
				select {
				case batch = <-spare:
				default:
					batch = make([]outcome, 0, c.cfg.FlushSize)
				}
				timer.Reset(c.cfg.FlushInterval)
			}
			batch = append(batch, o)
		case out <- batch:
			batch, due = nil, false
			timer.Stop()
		case <-timer.C:
			due = true
		}
	}
}

// flushWithRetry records a batch and returns the outcomes it could not
// record. While the database is unreachable it retries; senders block
// behind the full results channel meanwhile, so claiming stops too. If the
// database stays away for good, the deliveries are still due in the table
// and are sent again: at-least-once. Any other error means one result
// cannot be stored (a bug, a constraint): the batch is split so the others
// are recorded, and the lone failure is returned.
func (c *completer) flushWithRetry(batch []outcome) (lost []outcome) {
	for attempt := 1; ; attempt++ {
		timeout := 30 * time.Second
		if d := c.shutdownDeadline.Load(); d != 0 {
			timeout = min(timeout, time.Until(time.Unix(0, d)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
		start := time.Now()
		err := c.flush(ctx, batch)
		cancel()
		c.traceFlush(start, attempt, batch, err)
		c.metrics.observeFlush(time.Since(start), err)
		c.log.Debug("flush", "results", len(batch), "ms", time.Since(start).Milliseconds())
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			if len(batch) == 1 {
				c.log.Error("cannot record a delivery result; it will be sent again",
					"delivery_id", batch[0].d.ID, "err", err, "after", c.cfg.LeaseMargin)
				return batch
			}
			half := len(batch) / 2
			return append(c.flushWithRetry(batch[:half]), c.flushWithRetry(batch[half:])...)
		case attempt == 1 || attempt%30 == 0:
			c.log.Error("record delivery results: database unavailable, retrying", "err", err, "results", len(batch), "attempt", attempt)
		}
		if attempt >= 120 || c.pastShutdownDeadline() { // long enough (or we are stopping): the rows are due again
			c.log.Error("giving up recording results; they will be sent again", "results", len(batch))
			c.unrecorded.Add(int64(len(batch)))
			return batch
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Millisecond, 5*time.Second))
	}
}

// retryable reports whether err is the database being unreachable or
// overloaded (worth retrying as is) rather than a statement that will fail
// again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "53"),
			strings.HasPrefix(pgErr.Code, "57P"), pgErr.Code == "40001", pgErr.Code == "40P01":
			return true
		case db.RoutedToDefault(err):
			// The attempts' insert routed one to the default partition, then
			// waited for it while the attempt's day got its own partition
			// (worker/partitions.go); PostgreSQL refuses the row for the
			// default's new bounds. Sent again, it goes to the new one.
			// (A completion's delivered row in the same race was routed to
			// the new partition after the wait,
			// TestDeliveredRacingANewPartition; its refusal is retryable
			// in case PostgreSQL refuses it instead.)
			return true
		}
		return false
	}
	return true // connection errors, timeouts: no server verdict
}

// nextState decides what the delivery becomes after attempt attemptNo.
func (c *completer) nextState(o *outcome, attemptNo int32, now time.Time) (string, time.Time) {
	switch o.res.Outcome {
	case sender.OK:
		return "delivered", now
	case sender.Transient:
		if attemptNo < o.d.MaxAttempts {
			c.rndMu.Lock()
			wait := c.backoff.Next(int(attemptNo), o.res.RetryAfter, c.rnd)
			c.rndMu.Unlock()
			return "failed", o.finished.Add(wait)
		}
	}
	return "dead", now
}

// successResolution is how stale last_success_at may be. A busy endpoint
// succeeds many times per batch; writing its health row for each batch
// only to move that timestamp by milliseconds would be one of the hottest
// writes in the database.
const successResolution = time.Second

// deref is *p, or T's zero value when p is nil (sqlc maps nullable columns
// to pointers).
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
