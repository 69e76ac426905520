package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/ratelimit"
	"github.com/hookline/hookline/worker/tracing"
)

// claimed is a delivery this worker claimed: it holds it (claimer.held)
// until its result is recorded.
type claimed = db.DeliveryClaimRow

// claimerConfig configures a claimer; Worker.New fills it from Config and
// wires it to the other services; validate says what is missing.
type claimerConfig struct {
	// Pool reads the rate limits, the open breakers and the NOTIFY
	// queue's fill; SessionPool is where the LISTEN connection is opened.
	Pool        *pgxpool.Pool
	SessionPool *pgxpool.Pool
	// WorkerID is the lease owner of the breaker probes it claims.
	WorkerID string
	// Own is the shards this worker owns and the session the claims run
	// on, and Alive whether this worker holds its liveness lock (without
	// it, claims wait): both the liveness service's (liveness.go).
	Own   *ownership
	Alive *atomic.Bool
	// Held is what this worker claimed and has not yet recorded: the
	// claimer adds what it claims and forgets what the completer recorded
	// (recorded); liveness counts it.
	Held *holdings
	// Queue takes claimed deliveries to the dispatcher's senders, and
	// Probes the breaker probes, each sent at once on its own; the claimer
	// sends on both and closes both when it stops.
	Queue  chan queued
	Probes chan claimed
	// Concurrency and the queue's capacity are the room it claims for;
	// ClaimBatch bounds one claim.
	Concurrency int
	ClaimBatch  int
	// PollInterval is the longest wait between looks everywhere;
	// LeaseMargin is a probe's lease past its timeout, and how long a
	// result that cannot be recorded keeps its delivery held.
	PollInterval time.Duration
	LeaseMargin  time.Duration
	Breaker      breaker.Policy
	Logger       *slog.Logger
	Now          func() time.Time
	// DBNow is the "now" passed to SQL (nil: the database's clock; see
	// Worker.dbNow).
	DBNow func() *time.Time
	// Metrics and Tracer may be nil (no metrics, traces off).
	Metrics *Metrics
	Tracer  *tracing.Tracer
}

func (c claimerConfig) validate() error {
	switch {
	case c.Pool == nil, c.SessionPool == nil:
		return errors.New("claimer: Pool and SessionPool are required")
	case c.WorkerID == "":
		return errors.New("claimer: WorkerID is required")
	case c.Own == nil, c.Alive == nil, c.Held == nil:
		return errors.New("claimer: Own, Alive and Held are required")
	case c.Queue == nil, c.Probes == nil:
		return errors.New("claimer: Queue and Probes are required")
	case c.Concurrency <= 0, c.ClaimBatch <= 0:
		return errors.New("claimer: Concurrency and ClaimBatch must be positive")
	case c.PollInterval <= 0, c.LeaseMargin <= 0:
		return errors.New("claimer: PollInterval and LeaseMargin must be positive")
	case c.Logger == nil:
		return errors.New("claimer: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("claimer: Now and DBNow are required")
	}
	return nil
}

// claimer is the first stop of a delivery's walk in the worker: it claims
// due deliveries from the shards this worker owns, where the wake-ups say
// (hints.go), holds them (held.go) and hands them to the dispatcher
// through Queue, and claims the breaker probes (claim_maintain.go) for
// Probes. It calls nothing of the dispatcher's or the completer's: they
// answer through the funcs it gives them (sent, recorded).
type claimer struct {
	cfg     claimerConfig
	q       *db.Queries
	log     *slog.Logger
	now     func() time.Time
	dbNow   func() *time.Time
	metrics *Metrics
	breaker breaker.Policy
	limits  *ratelimit.Registry
	capped  atomic.Bool // the last claim had rate-limited or paused endpoints

	own   *ownership
	alive *atomic.Bool
	held  *holdings
	hints claimHints    // where the claim loop looks next
	wake  chan struct{} // a wake-up arrived (NOTIFY or WakeFor)
	freed chan struct{} // a send finished or a batch was recorded (the loop may claim again)
	// queue holds claimed deliveries for the senders, at most
	// min(ClaimBatch, Concurrency) of them; probes takes breaker probes
	// to the dispatcher.
	queue  chan queued
	probes chan claimed
	busy   atomic.Int64 // claimed deliveries not yet sent: queued or in flight

	// claimPasses counts claim statements that looked at every endpoint
	// and completed, and claimedRows the deliveries every claim and the
	// breaker probes took (always updated first). They make "the worker
	// looked and took nothing" observable: tests wait for passes instead
	// of sleeping.
	claimPasses atomic.Int64
	claimedRows atomic.Int64
	// lookedFor is how many looks everywhere had been asked for
	// (claimHints.askedEverywhere) when the last claim that looked
	// everywhere took its hints: a test waits for it to reach what was
	// asked before it relies on no look everywhere coming.
	lookedFor atomic.Int64
}

func newClaimer(cfg claimerConfig) (*claimer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &claimer{
		cfg: cfg, q: db.New(cfg.Pool), log: cfg.Logger, now: cfg.Now, dbNow: cfg.DBNow, metrics: cfg.Metrics,
		breaker: cfg.Breaker, limits: ratelimit.NewRegistry(), own: cfg.Own, alive: cfg.Alive, held: cfg.Held,
		wake: make(chan struct{}, 1), freed: make(chan struct{}, 1), queue: cfg.Queue, probes: cfg.Probes,
	}, nil
}

// Run claims until ctx ends. It loads the rate limits, then runs the
// LISTEN (listen), its periodic jobs (maintain: breaker probes, rate
// limits, the NOTIFY queue's fill) and the claim loop. When ctx ends it
// closes the queue (the senders finish what they hold and give back what
// is still queued), waits for its jobs and closes Probes.
func (c *claimer) Run(ctx context.Context) {
	c.refreshLimits(ctx)
	var jobs sync.WaitGroup
	jobs.Go(func() { c.listen(ctx) })
	jobs.Go(func() { c.maintain(ctx) })
	c.claimLoop(ctx)
	close(c.queue)
	jobs.Wait()
	close(c.probes)
}

// sent is told by the dispatcher of every send finished (or given back
// unsent): the room it took is free again.
func (c *claimer) sent() {
	c.busy.Add(-1)
	signal(c.freed)
}

// recorded is told by the completer of each batch recorded (lost: those
// of its results it could not record). The recorded rows no longer count
// against their endpoints' in-flight caps: the claim loop may find work
// for those endpoints it could not before.
func (c *claimer) recorded(batch, lost []outcome) {
	c.held.remove(batch, lost)
	if len(lost) > 0 {
		c.held.removeAfter(lost, c.cfg.LeaseMargin)
	}
	ids := make([]int64, len(batch))
	for i := range batch {
		ids[i] = batch[i].d.EndpointID
	}
	c.hints.add(ids...)
	signal(c.freed)
}

// claimLoop claims due deliveries whenever there is room for them, until
// ctx ends, and queues them for the senders (claimOnce). It wakes on
// NOTIFY, on a finished send, and on the poll interval; after a full
// batch it claims again at once, since more work is probably due.
//
// Where it looks is c.hints: the endpoints a NOTIFY or a recorded
// completion named, or every endpoint. It looks everywhere at least once
// per poll interval (every 100 ms while rate limits hold deliveries back),
// however busy the wake-ups keep it, so a retry or a pause that comes due
// waits at most that long.
//
// Room is the send slots plus the local queue (see claimer.queue):
// claiming while every sender is still busy means a sender that finishes
// starts its next delivery at once instead of idling through a claim's
// round trip. With partners that take 20 ms to answer that is about a
// fifth more deliveries per second from the same concurrency.
func (c *claimer) claimLoop(ctx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	failures := 0
	capacity := c.cfg.Concurrency + cap(c.queue)
	// Claiming a handful of rows costs nearly as much as claiming hundreds,
	// so under load the loop waits until half the queue has drained.
	minClaim := max(1, cap(c.queue)/2)
	c.hints.all()
	var lookedEverywhere time.Time
	for {
		busy := int(c.busy.Load())
		room := capacity - busy
		full := false
		// Without its liveness lock this worker may already count as dead
		// to the others, who then own its shards: it claims nothing.
		if c.alive.Load() && (room >= minClaim || (room > 0 && busy == 0)) {
			every := c.cfg.PollInterval
			if c.capped.Load() {
				every = min(every, 100*time.Millisecond)
			}
			pass, err := c.claimOnce(ctx, room, time.Since(lookedEverywhere) >= every)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				failures++
				if failures == 1 || failures%60 == 0 {
					c.log.Error("claim deliveries", "err", err, "consecutive_failures", failures)
				}
			case pass.claimed:
				failures = 0
				if pass.everywhere {
					lookedEverywhere = time.Now()
				}
				full = pass.full
			}
		}
		if full && ctx.Err() == nil {
			continue
		}
		wait := c.cfg.PollInterval
		if failures > 0 {
			wait = min(time.Duration(failures)*time.Second, 10*time.Second)
		} else if c.capped.Load() {
			// Tokens refill continuously; look again soon rather than
			// waiting a whole poll interval.
			wait = min(wait, 100*time.Millisecond)
		}
		poll.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-c.freed:
		case <-poll.C:
		}
	}
}

// claimPass is what one pass of the claim loop did.
type claimPass struct {
	claimed    bool // a claim ran and succeeded (it may have taken nothing)
	everywhere bool // it looked at every endpoint
	full       bool // it took as many as it asked for: more are probably due
}

// claimOnce is one pass of the claim loop: it claims up to room (at most
// ClaimBatch) where the hints say, everywhere when everywhereNow, queues
// what it took for the senders, and asks to look again at once where a
// full batch left more behind. A pass with nothing named since the last,
// or with no shard to claim from, claims nothing and fails nothing (the
// reconcile wakes the loop when it takes a shard; named endpoints wait
// for the look everywhere that follows); a failed claim names its
// endpoints again. It is also the test hook for one pass.
func (c *claimer) claimOnce(ctx context.Context, room int, everywhereNow bool) (claimPass, error) {
	ids, everywhere, asked := c.hints.take()
	if everywhereNow {
		ids, everywhere = nil, true
	}
	if !everywhere {
		ids = c.ownedOf(ids)
		if len(ids) == 0 {
			return claimPass{}, nil // nothing was named since the last claim
		}
	}
	n := min(room, c.cfg.ClaimBatch)
	rows, err := c.claim(ctx, n, ids)
	switch {
	case ctx.Err() != nil:
		return claimPass{}, nil
	case errors.Is(err, errNoShards), errors.Is(err, errNoSession):
		return claimPass{}, nil
	case err != nil:
		c.hints.add(ids...) // everywhere follows from the poll interval
		return claimPass{}, err
	}
	c.claimedRows.Add(int64(len(rows)))
	if everywhere {
		c.lookedFor.Store(asked)
		c.claimPasses.Add(1)
	}
	at := time.Now()
	c.busy.Add(int64(len(rows)))
	for i := range rows {
		c.queue <- queued{d: rows[i], at: at} // room was checked: never blocks for long
	}
	// A full batch leaves more behind where it looked: look there again
	// at once.
	pass := claimPass{claimed: true, everywhere: everywhere, full: len(rows) == n}
	if pass.full && everywhere {
		c.hints.all()
	} else if pass.full {
		c.hints.add(ids...)
	}
	return pass, nil
}

// ownedOf keeps the endpoints of ids in shards this worker may claim from:
// every replica hears every wake-up NOTIFY, and a claim at another's
// endpoints would find nothing.
func (c *claimer) ownedOf(ids []int64) []int64 {
	if len(ids) == 0 {
		return ids
	}
	owned := c.own.claimable()
	kept := ids[:0]
	for _, id := range ids {
		if owned[shardOf(id)] {
			kept = append(kept, id)
		}
	}
	return kept
}

// claim takes up to n due deliveries of the endpoints ids (of every
// endpoint when ids is nil) in the shards this worker owns, within each
// endpoint's in-flight cap and this worker's rate-limit tokens, and holds
// them (c.held) until their results are recorded. It returns errNoShards
// when this worker owns no shard it may claim from.
func (c *claimer) claim(ctx context.Context, n int, ids []int64) ([]claimed, error) {
	now := c.now()
	capped, caps := c.limits.Snapshot(now)
	c.capped.Store(len(capped) > 0)
	start := time.Now()
	var rows []claimed
	err := c.own.withSession(func(conn *pgx.Conn, shards []bool) error {
		heldEndpoints, heldIDs := c.held.snapshot()
		var err error
		rows, err = claimRows(ctx, conn, db.DeliveryClaimParams{
			Now:             c.dbNow(),
			EndpointIds:     ids,
			Shards:          shards,
			HeldEndpointIds: heldEndpoints,
			HeldIds:         heldIDs,
			CappedIds:       capped,
			Caps:            caps,
			MaxRows:         int32(n),
		})
		if err == nil {
			c.held.add(rows) // before another claim can run on the session
		}
		return err
	})
	if errors.Is(err, errNoShards) || errors.Is(err, errNoSession) {
		return nil, err
	}
	c.metrics.observeClaim(time.Since(start), len(rows), err)
	c.traceClaim(start, n, ids == nil, rows, err)
	c.log.Debug("claim", "rows", len(rows), "asked", n, "ms", time.Since(start).Milliseconds())
	if err != nil {
		return nil, err
	}
	if len(capped) > 0 && len(rows) > 0 {
		taken := map[int64]int{}
		for i := range rows {
			taken[rows[i].EndpointID]++
		}
		for id, k := range taken {
			c.limits.Take(id, k, now)
		}
	}
	return rows, nil
}

// claimRows runs the claim as one pipeline (one round trip, one implicit
// transaction): its settings (a cached plan), then the claim itself.
func claimRows(ctx context.Context, conn *pgx.Conn, arg db.DeliveryClaimParams) ([]claimed, error) {
	q := db.New(db.NewPipeline(conn))
	_ = q.ClaimSettings(ctx) // queued: errors surface from the claim
	return q.DeliveryClaim(ctx, arg)
}
