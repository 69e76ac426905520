package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
)

// Periods of the housekeeper's tidy loop. They are the periods these jobs
// had when the maintenance loop ran them, on the same 250 ms tick.
const (
	tidyTick     = reapEvery
	analyzeEvery = time.Second     // young tables, until autovacuum has analyzed them
	foldEvery    = 5 * time.Second // dead-letter tallies
)

// Retention says how long telemetry and finished work are kept; a zero
// field takes DefaultRetention's value.
type Retention struct {
	Attempts         time.Duration // delivery_attempts rows
	MinuteHistograms time.Duration // 60 s and 900 s latency slots
	HourlyHistograms time.Duration // 3600 s latency rollups
	Delivered        time.Duration // delivered deliveries, and events with nothing left
	// Every is how often a retention pass runs (default a minute). A pass
	// stops after Budget (default 5 s; each of its steps runs at least one
	// batch) and leaves the rest to the next, which then comes sooner (see
	// housekeeper.retainLoop).
	Every  time.Duration
	Budget time.Duration
	// Batch bounds one DELETE (default 5,000 rows): a short transaction
	// that never holds many row locks, so delivery is not blocked behind
	// retention.
	Batch int
}

// DefaultRetention is DESIGN §7: attempts 7 days, minute histograms 48 h,
// hourly rollups 30 days; delivered work 7 days; a pass a minute.
func DefaultRetention() Retention {
	return Retention{
		Attempts:         7 * 24 * time.Hour,
		MinuteHistograms: 48 * time.Hour,
		HourlyHistograms: 30 * 24 * time.Hour,
		Delivered:        7 * 24 * time.Hour,
		Every:            time.Minute,
		Budget:           5 * time.Second,
		Batch:            5000,
	}
}

// housekeeperConfig configures a housekeeper. Worker.New fills it from
// Config, with DefaultRetention's values for the retention fields left
// zero; validate says what is missing.
type housekeeperConfig struct {
	// Pool runs the partition DDL, the analyses and the tally folds.
	Pool *pgxpool.Pool
	// SessionPool holds a retention pass's session lock (RetentionLockTry):
	// connections that keep their server session.
	SessionPool *pgxpool.Pool
	Retention   Retention
	Logger      *slog.Logger
	Now         func() time.Time
	// Metrics receives the retention counters; nil disables them.
	Metrics *Metrics
}

func (c housekeeperConfig) validate() error {
	r := c.Retention
	switch {
	case c.Pool == nil:
		return errors.New("housekeeper: Pool is required")
	case c.SessionPool == nil:
		return errors.New("housekeeper: SessionPool is required")
	case c.Logger == nil:
		return errors.New("housekeeper: Logger is required")
	case c.Now == nil:
		return errors.New("housekeeper: Now is required")
	case r.Attempts <= 0, r.MinuteHistograms <= 0, r.HourlyHistograms <= 0, r.Delivered <= 0:
		return errors.New("housekeeper: every Retention period must be positive")
	case r.Every <= 0, r.Budget <= 0, r.Batch <= 0:
		return errors.New("housekeeper: Retention.Every, Budget and Batch must be positive")
	}
	return nil
}

// housekeeper keeps the database's size and statistics in hand, apart
// from the delivery path: retention passes that delete telemetry and
// finished work past their retention and make and drop the partitions of
// attempts, delivered deliveries and events (retention.go, partitions*.go),
// analyses of young queue tables before autovacuum's first (analyze.go),
// and the folding of dead-letter tally changes (tallies.go). Nothing it
// does is needed for a delivery to be sent or recorded: when it fails,
// rows go to default partitions and reads get slower, and it tries again.
type housekeeper struct {
	cfg     housekeeperConfig
	pool    *pgxpool.Pool
	session *pgxpool.Pool
	q       *db.Queries
	log     *slog.Logger
	now     func() time.Time
	metrics *Metrics

	// replanLater holds the partitioned tables (name → partitioned)
	// whose replan after an attach could not have its lock.
	replanLater sync.Map
	// retainMu makes retention passes one at a time (retainLoop's and
	// RunOnce's); sweep, the events sweep's cursor, is under it.
	retainMu sync.Mutex
	sweep    eventSweep
}

func newHousekeeper(cfg housekeeperConfig) (*housekeeper, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &housekeeper{
		cfg:     cfg,
		pool:    cfg.Pool,
		session: cfg.SessionPool,
		q:       db.New(cfg.Pool),
		log:     cfg.Logger,
		now:     cfg.Now,
		metrics: cfg.Metrics,
	}, nil
}

// Run keeps house until ctx ends: retention passes on one goroutine (a
// long pass holds up nothing else) and the tidy loop on another.
func (h *housekeeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { h.retainLoop(ctx) })
	wg.Go(func() { h.tidyLoop(ctx) })
	wg.Wait()
}

// RunOnce runs one retention pass, waiting for another replica's pass to
// end rather than skip (tests, and Worker.RetainNow).
func (h *housekeeper) RunOnce(ctx context.Context) error {
	_, err := h.retain(ctx, true)
	return err
}

// prepare makes the spans of deliveries_delivered the completions will
// write into, and the events' spans, before the first send rather than at
// the first retention pass: a delivered row written before its span's
// partition exists goes to the default partition, and moving it out when
// the partition is made is the one moment a read of deliveries can miss
// it (a statement planned before the ATTACH does not see the new
// partition). The ingest's events likewise.
func (h *housekeeper) prepare(ctx context.Context) {
	if _, err := h.keepDeliveredPartitions(ctx, h.now()); err != nil && ctx.Err() == nil {
		h.log.Warn("delivered partitions", "err", err)
	}
	if _, err := h.makeEventPartitions(ctx, h.now()); err != nil && ctx.Err() == nil {
		h.log.Warn("event partitions", "err", err)
	}
}

// tidyLoop analyzes young tables every analyzeEvery until autovacuum has
// analyzed them, and folds dead-letter tallies every foldEvery, until ctx
// ends. Each job logs its failures and is tried again at its next turn.
func (h *housekeeper) tidyLoop(ctx context.Context) {
	tick := time.NewTicker(tidyTick)
	defer tick.Stop()
	var lastAnalyze, lastFold time.Time
	analyzed := false // deliveries and events have been analyzed once (analyzeYoung)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if !analyzed && now.Sub(lastAnalyze) >= analyzeEvery {
			lastAnalyze = now
			var err error
			if analyzed, err = h.analyzeYoung(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("analyze new tables", "err", err)
			}
		}
		if now.Sub(lastFold) >= foldEvery {
			lastFold = now
			if err := h.foldDeadLetterTallies(ctx); err != nil && ctx.Err() == nil {
				h.log.Error("fold dead-letter tallies", "err", err)
			}
		}
	}
}
