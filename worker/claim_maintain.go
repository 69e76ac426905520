package worker

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/ratelimit"
)

// maintain runs the claimer's periodic jobs until ctx ends, on the
// maintenance tick: breaker probes (probeEvery), rate limits
// (heartbeatEvery) and the NOTIFY queue's fill (notifyCheckEvery). Each
// logs its own failures and is tried again on its next tick.
func (c *claimer) maintain(ctx context.Context) {
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	var lastProbe, lastLimits, lastNotifyCheck time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if now.Sub(lastProbe) >= probeEvery {
			lastProbe = now
			c.probe(ctx)
		}
		if now.Sub(lastLimits) >= heartbeatEvery {
			lastLimits = now
			c.refreshLimits(ctx)
		}
		if now.Sub(lastNotifyCheck) >= notifyCheckEvery {
			lastNotifyCheck = now
			c.checkNotifyQueue(ctx)
		}
	}
}

// checkNotifyQueue warns while PostgreSQL's NOTIFY queue is too full for
// hookline's wake-ups (db.NotifyQueueLimit): deliveries then wait for the
// poll, and the queue empties only once the session holding it back reads
// or goes (PostgreSQL's log names it).
func (c *claimer) checkNotifyQueue(ctx context.Context) {
	usage, err := c.q.NotifyQueueUsage(ctx)
	if err != nil || usage < db.NotifyQueueLimit {
		return
	}
	c.log.Warn("the NOTIFY queue is too full for wake-ups: new deliveries wait for the poll; a session listening in this PostgreSQL cluster is not reading its notifications (see its log)",
		"usage", usage, "limit", db.NotifyQueueLimit, "poll_interval", c.cfg.PollInterval)
}

// refreshLimits loads rate-limited endpoints into this replica's token
// buckets. Each endpoint's whole rate: only the worker that owns its shard
// sends to it.
func (c *claimer) refreshLimits(ctx context.Context) {
	rows, err := c.q.EndpointRateLimits(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("load rate limits", "err", err)
		}
		return
	}
	now := c.now()
	keep := make(map[int64]bool, len(rows))
	for _, r := range rows {
		burst := 0
		if r.Burst != nil {
			burst = int(*r.Burst)
		}
		c.limits.Set(r.ID, ratelimit.Limit{PerSecond: r.RatePerSec, Burst: burst}, 1, now)
		keep[r.ID] = true
	}
	c.limits.Retain(keep)
}

// probe moves open breakers of this worker's shards whose cooldown passed
// to half-open and sends exactly one probe delivery for each.
func (c *claimer) probe(ctx context.Context) {
	if err := c.startProbes(ctx); err != nil {
		if ctx.Err() == nil {
			c.log.Error("start breaker probes", "err", err)
		}
		return
	}
	var rows []db.DeliveryClaimProbesRow
	err := c.own.withSession(func(conn *pgx.Conn, shards []bool) error {
		_, held := c.held.snapshot()
		var err error
		rows, err = db.New(conn).DeliveryClaimProbes(ctx, db.DeliveryClaimProbesParams{
			Now: c.dbNow(), LeaseMarginMs: int32(c.cfg.LeaseMargin / time.Millisecond), WorkerID: c.cfg.WorkerID,
			Shards: shards, HeldIds: held,
		})
		if err == nil {
			for _, r := range rows {
				c.held.add([]claimed{claimed(r)})
			}
		}
		return err
	})
	switch {
	case errors.Is(err, errNoShards), errors.Is(err, errNoSession):
		return
	case err != nil:
		if ctx.Err() == nil {
			c.log.Error("claim breaker probes", "err", err)
		}
		return
	}
	c.claimedRows.Add(int64(len(rows)))
	for _, r := range rows {
		c.log.Info("sending breaker probe", "endpoint_id", r.EndpointID, "delivery_id", r.ID)
		c.busy.Add(1)
		c.probes <- claimed(r) // the dispatcher sends it at once, outside the queue
	}
}

// startProbes moves the open breakers of this worker's shards whose probe
// breaker.Policy says is due to half-open, each only if no other replica
// moved it first.
func (c *claimer) startProbes(ctx context.Context) error {
	owned := c.own.claimable()
	if owned.count() == 0 {
		return nil
	}
	rows, err := c.q.EndpointHealthOpen(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	var ids []int64
	var opened []time.Time
	for _, r := range rows {
		if !owned[shardOf(r.EndpointID)] {
			continue
		}
		h := breaker.Stored(r.State, r.ConsecutiveFailures, r.OpenedAt, r.CooldownSeconds, r.Paused)
		if _, due := c.breaker.StartProbe(h, now); due {
			ids = append(ids, r.EndpointID)
			opened = append(opened, *r.OpenedAt)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err = c.q.EndpointHealthStartProbes(ctx, db.EndpointHealthStartProbesParams{Now: c.dbNow(), EndpointIds: ids, OpenedAts: opened})
	return err
}
