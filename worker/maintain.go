package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/ratelimit"
)

// Periods of the maintenance loop.
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

// listen wakes the claim loop on NOTIFY hookline_deliveries (sent by ingest
// and replay on commit). It holds its own connection, reconnecting after
// failures; polling covers any gap.
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("notification listener stopped; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.session.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN hookline_deliveries"); err != nil {
		return err
	}
	// Notifications sent while no LISTEN was in place are lost.
	w.wakeEverywhere()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if ids, ok := parseEndpointList(n.Payload); ok {
			w.hints.add(ids...)
		} else {
			w.hints.all()
		}
		signal(w.wake)
	}
}

// maintain runs the periodic jobs until ctx ends. Each job logs its own
// failures and is retried on its next tick; none holds a transaction across
// the others.
func (w *Worker) maintain(ctx, sendCtx context.Context) {
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	var lastProbe, lastLimits, lastRescue, lastLatency, lastRefresh, lastNotifyCheck time.Time
	for {
		if err := w.live.reapDead(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("rescue deliveries of dead workers", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := w.replayStep(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("bulk replay", "err", err)
		}
		now := time.Now()
		if now.Sub(lastProbe) >= probeEvery {
			lastProbe = now
			w.probe(ctx, sendCtx)
		}
		if now.Sub(lastLimits) >= heartbeatEvery {
			lastLimits = now
			w.refreshLimits(ctx)
		}
		if now.Sub(lastRescue) >= rescueEvery {
			lastRescue = now
			if n, err := w.rescue(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("rescue expired leases", "err", err)
			} else if n > 0 {
				w.log.Warn("rescued deliveries whose lease expired", "count", n)
				w.wakeEverywhere()
			}
		}
		if now.Sub(lastLatency) >= latencyEvery {
			lastLatency = now
			if err := w.flushLatency(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("flush latency histograms", "err", err)
			}
		}
		if now.Sub(lastRefresh) >= refreshEvery {
			lastRefresh = now
			if err := w.refreshHealth(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("refresh endpoint latency", "err", err)
			}
		}
		if now.Sub(lastNotifyCheck) >= notifyCheckEvery {
			lastNotifyCheck = now
			w.checkNotifyQueue(ctx)
		}
	}
}

// checkNotifyQueue warns while PostgreSQL's NOTIFY queue is too full for
// hookline's wake-ups (db.NotifyQueueLimit): deliveries then wait for the
// poll, and the queue empties only once the session holding it back reads
// or goes (PostgreSQL's log names it).
func (w *Worker) checkNotifyQueue(ctx context.Context) {
	usage, err := w.q.NotifyQueueUsage(ctx)
	if err != nil || usage < db.NotifyQueueLimit {
		return
	}
	w.log.Warn("the NOTIFY queue is too full for wake-ups: new deliveries wait for the poll; a session listening in this PostgreSQL cluster is not reading its notifications (see its log)",
		"usage", usage, "limit", db.NotifyQueueLimit, "poll_interval", w.cfg.PollInterval)
}

// refreshLimits loads rate-limited endpoints into this replica's token
// buckets. Each endpoint's whole rate: only the worker that owns its shard
// sends to it.
func (w *Worker) refreshLimits(ctx context.Context) {
	rows, err := w.q.EndpointRateLimits(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("load rate limits", "err", err)
		}
		return
	}
	now := w.now()
	keep := make(map[int64]bool, len(rows))
	for _, r := range rows {
		burst := 0
		if r.Burst != nil {
			burst = int(*r.Burst)
		}
		w.limits.Set(r.ID, ratelimit.Limit{PerSecond: r.RatePerSec, Burst: burst}, 1, now)
		keep[r.ID] = true
	}
	w.limits.Retain(keep)
}

// probe moves open breakers of this worker's shards whose cooldown passed
// to half-open and sends exactly one probe delivery for each.
func (w *Worker) probe(ctx context.Context, sendCtx context.Context) {
	if err := w.startProbes(ctx); err != nil {
		if ctx.Err() == nil {
			w.log.Error("start breaker probes", "err", err)
		}
		return
	}
	var rows []db.DeliveryClaimProbesRow
	err := w.own.withSession(func(conn *pgx.Conn, shards []bool) error {
		_, held := w.held.snapshot()
		var err error
		rows, err = db.New(conn).DeliveryClaimProbes(ctx, db.DeliveryClaimProbesParams{
			Now: w.dbNow(), LeaseMarginMs: int32(w.cfg.LeaseMargin / time.Millisecond), WorkerID: w.id,
			Shards: shards, HeldIds: held,
		})
		if err == nil {
			for _, r := range rows {
				w.held.add([]claimed{claimed(r)})
			}
		}
		return err
	})
	switch {
	case errors.Is(err, errNoShards), errors.Is(err, errNoSession):
		return
	case err != nil:
		if ctx.Err() == nil {
			w.log.Error("claim breaker probes", "err", err)
		}
		return
	}
	w.claimedRows.Add(int64(len(rows)))
	for _, r := range rows {
		w.log.Info("sending breaker probe", "endpoint_id", r.EndpointID, "delivery_id", r.ID)
		w.dispatch(sendCtx, claimed(r))
	}
}

// startProbes moves the open breakers of this worker's shards whose probe
// breaker.Policy says is due to half-open, each only if no other replica
// moved it first.
func (w *Worker) startProbes(ctx context.Context) error {
	owned := w.own.claimable()
	if owned.count() == 0 {
		return nil
	}
	rows, err := w.q.EndpointHealthOpen(ctx)
	if err != nil {
		return err
	}
	now := w.now()
	var ids []int64
	var opened []time.Time
	for _, r := range rows {
		if !owned[shardOf(r.EndpointID)] {
			continue
		}
		h := breaker.Stored(r.State, r.ConsecutiveFailures, r.OpenedAt, r.CooldownSeconds, r.Paused)
		if _, due := w.breaker.StartProbe(h, now); due {
			ids = append(ids, r.EndpointID)
			opened = append(opened, *r.OpenedAt)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err = w.q.EndpointHealthStartProbes(ctx, db.EndpointHealthStartProbesParams{Now: w.dbNow(), EndpointIds: ids, OpenedAts: opened})
	return err
}

// rescue makes deliveries whose lease expired, or whose lease owner is one
// of deadWorkers (see reapDead), due again, records the lost attempt, and
// reopens the breaker of an endpoint whose probe was lost.
func (w *Worker) rescue(ctx context.Context, deadWorkers ...string) (int, error) {
	now := w.now()
	total := 0
	for {
		n, err := w.rescueBatch(ctx, now, deadWorkers)
		total += n
		if err != nil || n < rescueBatchSize {
			return total, err
		}
	}
}

const rescueBatchSize = 1000

func (w *Worker) rescueBatch(ctx context.Context, now time.Time, deadWorkers []string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.q.WithTx(tx)
		rows, err := q.DeliveryRescueExpired(ctx, db.DeliveryRescueExpiredParams{Now: w.dbNow(), MaxRows: rescueBatchSize, DeadWorkers: deadWorkers})
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
					s := newHealthState(w.breaker, h)
					s.h = w.breaker.Failure(s.h, s.threshold, now)
					s.probeID = 0
					states[h.EndpointID] = s
				}
			}
		}
		if len(states) == 0 {
			return nil
		}
		return writeHealth(ctx, q, states, w.dbNow())
	})
	return n, err
}
