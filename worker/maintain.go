package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
)

// Periods of the maintenance jobs (the maintainer's and the claimer's).
const (
	probeEvery     = time.Second
	heartbeatEvery = 5 * time.Second // also how often rate limits are reloaded
	// hungAfter is how long a worker may hold its liveness lock without a
	// heartbeat before the others end its session (WorkerTerminateHung).
	hungAfter    = time.Minute
	rescueEvery  = 5 * time.Second
	latencyEvery = 5 * time.Second  // DESIGN: flushed at least every 10 s
	refreshEvery = 30 * time.Second // DESIGN: percentiles refreshed at least every 60 s
	// notifyCheckEvery is how often the NOTIFY queue's fill is checked.
	notifyCheckEvery = time.Minute
	// replicaLiveFor is how long a heartbeat counts a replica as alive (with
	// its liveness lock held: see WorkerOwnersLive).
	replicaLiveFor = 20 * time.Second
)

// maintainerConfig configures a maintainer; Worker.New fills it from
// Config and wires it to the other services; validate says what is
// missing.
type maintainerConfig struct {
	// Pool runs the rescues, the bulk replay's steps and the latency
	// merges.
	Pool    *pgxpool.Pool
	Breaker breaker.Policy
	// ReapDead finds the workers that died and has their leases rescued
	// (the liveness service's reapDead, which calls rescue back).
	ReapDead func(ctx context.Context) error
	// WakeClaims tells the claim loop to look everywhere: deliveries were
	// made due again.
	WakeClaims func()
	Logger     *slog.Logger
	Now        func() time.Time
	// DBNow is the "now" passed to SQL (nil: the database's clock; see
	// Worker.dbNow).
	DBNow func() *time.Time
}

func (c maintainerConfig) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("maintainer: Pool is required")
	case c.ReapDead == nil, c.WakeClaims == nil:
		return errors.New("maintainer: ReapDead and WakeClaims are required")
	case c.Logger == nil:
		return errors.New("maintainer: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("maintainer: Now and DBNow are required")
	}
	return nil
}

// maintainer puts back in the queue what no send will finish and keeps
// the figures the breaker reads fresh, beside the delivery path: it
// rescues deliveries whose lease expired or whose worker died (rescue),
// steps bulk replays (replay.go), merges latency samples into histograms
// and recomputes each endpoint's percentiles (telemetry.go).
type maintainer struct {
	cfg     maintainerConfig
	pool    *pgxpool.Pool
	q       *db.Queries
	log     *slog.Logger
	now     func() time.Time
	dbNow   func() *time.Time
	breaker breaker.Policy
}

func newMaintainer(cfg maintainerConfig) (*maintainer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &maintainer{cfg: cfg, pool: cfg.Pool, q: db.New(cfg.Pool), log: cfg.Logger, now: cfg.Now,
		dbNow: cfg.DBNow, breaker: cfg.Breaker}, nil
}

// Run runs the maintenance jobs until ctx ends, on the maintenance tick:
// the look for dead workers (every tick), a bulk replay step (every
// tick), rescues (rescueEvery), the latency flush (latencyEvery) and the
// percentiles' refresh (refreshEvery). Each job logs its own failures
// and is tried again on its next tick; none holds a transaction across
// the others.
func (m *maintainer) Run(ctx context.Context) {
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	var lastRescue, lastLatency, lastRefresh time.Time
	for {
		if err := m.cfg.ReapDead(ctx); err != nil && ctx.Err() == nil {
			m.log.Error("rescue deliveries of dead workers", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := m.replayStep(ctx); err != nil && ctx.Err() == nil {
			m.log.Error("bulk replay", "err", err)
		}
		now := time.Now()
		if now.Sub(lastRescue) >= rescueEvery {
			lastRescue = now
			if n, err := m.rescue(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("rescue expired leases", "err", err)
			} else if n > 0 {
				m.log.Warn("rescued deliveries whose lease expired", "count", n)
				m.cfg.WakeClaims()
			}
		}
		if now.Sub(lastLatency) >= latencyEvery {
			lastLatency = now
			if err := m.flushLatency(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("flush latency histograms", "err", err)
			}
		}
		if now.Sub(lastRefresh) >= refreshEvery {
			lastRefresh = now
			if err := m.refreshHealth(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("refresh endpoint latency", "err", err)
			}
		}
	}
}

// rescue makes deliveries whose lease expired, or whose lease owner is one
// of deadWorkers (see reapDead), due again, records the lost attempt, and
// reopens the breaker of an endpoint whose probe was lost.
func (m *maintainer) rescue(ctx context.Context, deadWorkers ...string) (int, error) {
	now := m.now()
	total := 0
	for {
		n, err := m.rescueBatch(ctx, now, deadWorkers)
		total += n
		if err != nil || n < rescueBatchSize {
			return total, err
		}
	}
}

const rescueBatchSize = 1000

func (m *maintainer) rescueBatch(ctx context.Context, now time.Time, deadWorkers []string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		q := m.q.WithTx(tx)
		rows, err := q.DeliveryRescueExpired(ctx, db.DeliveryRescueExpiredParams{Now: m.dbNow(), MaxRows: rescueBatchSize, DeadWorkers: deadWorkers})
		if err != nil {
			return err
		}
		n = len(rows)
		if n == 0 {
			return nil
		}
		attempts := make([]db.AttemptInsertParams, len(rows))
		byEndpoint := map[int64][]int64{}
		class := classLeaseExpired
		msg := "lease expired: the worker sending it stopped before recording a result"
		for i, r := range rows {
			attempts[i] = db.AttemptInsertParams{
				DeliveryID: r.ID, EndpointID: r.EndpointID, AttemptNo: r.AttemptCount,
				StartedAt: now, Outcome: "transient", ErrorClass: &class, Error: &msg,
			}
			byEndpoint[r.EndpointID] = append(byEndpoint[r.EndpointID], r.ID)
		}
		if _, err := q.AttemptInsert(ctx, attempts); err != nil {
			return fmt.Errorf("record lease_expired attempts: %w", err)
		}
		ids := make([]int64, 0, len(byEndpoint))
		for id := range byEndpoint {
			ids = append(ids, id)
		}
		health, err := q.EndpointHealthLock(ctx, ids)
		if err != nil {
			return err
		}
		states := map[int64]*healthState{}
		for _, h := range health {
			if h.ProbeDeliveryID == nil {
				continue
			}
			for _, id := range byEndpoint[h.EndpointID] {
				if id == *h.ProbeDeliveryID {
					// The probe was lost: that is a failed probe.
					s := newHealthState(m.breaker, h)
					s.h = m.breaker.Failure(s.h, s.threshold, now)
					s.probeID = 0
					states[h.EndpointID] = s
				}
			}
		}
		if len(states) == 0 {
			return nil
		}
		return writeHealth(ctx, q, states, m.dbNow())
	})
	return n, err
}
