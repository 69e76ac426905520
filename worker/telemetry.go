package worker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/latency"
	"github.com/hookline/hookline/worker/sender"
)

// Histogram resolutions stored in latency_histograms.
const (
	resMinute = 60
	resSlot   = int32(latency.SparkStep / time.Second) // sparkline points
	resHour   = 3600
)

// Windows of the cached latency figures.
const (
	window24h    = 24 * time.Hour
	recentWindow = 10 * time.Minute
)

type slotKey struct {
	endpointID int64
	resolution int32
	start      time.Time
}

// batchLatency is the latency_pending row of a completion batch's recorded
// attempts (those the fence let through, and only attempts that reached the
// network), written in the batch's transaction; nil when there are none.
func batchLatency(batch []outcome, applied map[int64]bool) (*db.LatencyPendingInsertParams, error) {
	rec := latency.NewRecorder()
	for i := range batch {
		o := &batch[i]
		if applied[o.d.ID] && o.sent() {
			rec.Observe(o.d.EndpointID, o.res.Started, o.res.Duration, o.res.Outcome == sender.OK)
		}
	}
	return pendingRow(rec)
}

// pendingRow is what rec holds as one latency_pending row, nil when it
// holds nothing.
func pendingRow(rec *latency.Recorder) (*db.LatencyPendingInsertParams, error) {
	drained := rec.Drain()
	if len(drained) == 0 {
		return nil, nil
	}
	p := db.LatencyPendingInsertParams{
		EndpointIds: make([]int64, 0, len(drained)),
		Minutes:     make([]time.Time, 0, len(drained)),
		Histograms:  make([][]byte, 0, len(drained)),
	}
	for k, h := range drained {
		enc, err := h.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("encode latency samples: %w", err)
		}
		p.EndpointIds = append(p.EndpointIds, k.EndpointID)
		p.Minutes = append(p.Minutes, k.Minute)
		p.Histograms = append(p.Histograms, enc)
	}
	return &p, nil
}

// pendingPerFlush bounds the latency_pending rows one flush merges; a
// backlog (after a long outage) is merged over several transactions.
const pendingPerFlush = 2000

// flushLatency merges stored latency samples (latency_pending, written with
// their attempts by any replica, a dead one's included) into the minute,
// 15-minute and hourly slots, until none are left.
func (m *maintainer) flushLatency(ctx context.Context) error {
	for {
		n, err := m.flushLatencyOnce(ctx)
		if err != nil || n < pendingPerFlush {
			return err
		}
	}
}

// flushLatencyOnce takes up to pendingPerFlush pending rows and merges them,
// in one transaction: slot rows are created if missing, then read and
// locked in key order, merged in Go (buckets are an opaque encoding) and
// written back, and the pending rows deleted. If anything fails, all of it
// rolls back and the samples wait for the next flush.
func (m *maintainer) flushLatencyOnce(ctx context.Context) (int, error) {
	taken := 0
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		q := m.q.WithTx(tx)
		pending, err := q.LatencyPendingTake(ctx, pendingPerFlush)
		if err != nil {
			return fmt.Errorf("take pending latency: %w", err)
		}
		taken = len(pending)
		slots := map[slotKey]*latency.Histogram{}
		var sample latency.Histogram
		for _, p := range pending {
			if len(p.EndpointIds) != len(p.Minutes) || len(p.Minutes) != len(p.Histograms) {
				m.log.Error("malformed pending latency row dropped")
				continue
			}
			for i, id := range p.EndpointIds {
				if err := sample.UnmarshalBinary(p.Histograms[i]); err != nil {
					m.log.Error("corrupt pending latency histogram dropped", "endpoint_id", id, "err", err)
					continue
				}
				for _, res := range []int32{resMinute, resSlot, resHour} {
					sk := slotKey{id, res, p.Minutes[i].UTC().Truncate(time.Duration(res) * time.Second)}
					if slots[sk] == nil {
						slots[sk] = &latency.Histogram{}
					}
					slots[sk].Merge(&sample)
				}
			}
		}
		if len(slots) == 0 {
			return nil
		}
		return m.mergeSlots(ctx, q, slots)
	})
	return taken, err
}

// mergeSlots adds histograms to their stored slots.
func (m *maintainer) mergeSlots(ctx context.Context, q *db.Queries, slots map[slotKey]*latency.Histogram) error {
	keys := make([]slotKey, 0, len(slots))
	for k := range slots {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b slotKey) int {
		return cmp.Or(cmp.Compare(a.endpointID, b.endpointID), cmp.Compare(a.resolution, b.resolution), a.start.Compare(b.start))
	})
	var ids []int64
	var resolutions []int32
	var starts []time.Time
	for _, k := range keys {
		ids, resolutions, starts = append(ids, k.endpointID), append(resolutions, k.resolution), append(starts, k.start)
	}

	if err := q.LatencySlotsEnsure(ctx, db.LatencySlotsEnsureParams{EndpointIds: ids, Resolutions: resolutions, BucketStarts: starts}); err != nil {
		return fmt.Errorf("create slots: %w", err)
	}
	stored, err := q.LatencySlotsLock(ctx, db.LatencySlotsLockParams{EndpointIds: ids, Resolutions: resolutions, BucketStarts: starts})
	if err != nil {
		return fmt.Errorf("lock slots: %w", err)
	}
	var p latency.Rows
	var scratch latency.Histogram
	for _, r := range stored {
		k := slotKey{r.EndpointID, r.ResolutionSeconds, r.BucketStart.UTC()}
		add := slots[k]
		if add == nil {
			continue
		}
		merged := &latency.Histogram{}
		if len(r.Buckets) > 0 {
			if err := scratch.UnmarshalBinary(r.Buckets); err != nil {
				// A corrupt row must not block telemetry forever: start it over.
				m.log.Error("corrupt latency histogram replaced", "endpoint_id", r.EndpointID, "err", err)
			} else {
				merged.Merge(&scratch)
			}
		}
		merged.Merge(add)
		if err := p.Add(k.endpointID, k.resolution, r.BucketStart, merged); err != nil {
			return err
		}
	}
	return q.LatencySlotsWrite(ctx, db.LatencySlotsWriteParams(p))
}

// refreshHealth recomputes every endpoint's cached latency: P50/P95/P99 over
// the rolling 24 h (merged hourly buckets), the recent P95 (merged minute
// buckets of the last 10 minutes; the early warning), and the 24 h
// sparklines (latency.SparkSlots slots of latency.SparkStep).
func (m *maintainer) refreshHealth(ctx context.Context) error {
	now := m.now().UTC()
	day, err := m.mergeSince(ctx, resHour, now.Truncate(time.Hour).Add(-window24h+time.Hour))
	if err != nil {
		return err
	}
	recent, err := m.mergeSince(ctx, resMinute, now.Truncate(time.Minute).Add(-recentWindow+time.Minute))
	if err != nil {
		return err
	}
	var p db.EndpointHealthSetLatencyParams
	p.Now = m.dbNow()
	ids := make([]int64, 0, len(day)+len(recent))
	for id := range day {
		ids = append(ids, id)
	}
	for id := range recent {
		if day[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		d, r := day[id], recent[id]
		p.EndpointIds = append(p.EndpointIds, id)
		p.P50sMs = append(p.P50sMs, quantileMs(d, 0.50))
		p.P95sMs = append(p.P95sMs, quantileMs(d, 0.95))
		p.P99sMs = append(p.P99sMs, quantileMs(d, 0.99))
		p.SampleCounts = append(p.SampleCounts, countOf(d))
		p.OkCounts = append(p.OkCounts, okOf(d))
		p.RecentP95sMs = append(p.RecentP95sMs, quantileMs(r, 0.95))
		p.RecentSampleCounts = append(p.RecentSampleCounts, countOf(r))
	}
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		q := m.q.WithTx(tx)
		if len(ids) > 0 {
			if err := q.EndpointHealthSetLatency(ctx, p); err != nil {
				return fmt.Errorf("set latency: %w", err)
			}
		}
		if err := q.EndpointHealthClearLatency(ctx, db.EndpointHealthClearLatencyParams{Now: m.dbNow(), KeepIds: ids}); err != nil {
			return fmt.Errorf("clear latency: %w", err)
		}
		if err := q.EndpointSparklinesRebuild(ctx, db.EndpointSparklinesRebuildParams{
			Start: latency.SparkStart(now), StepSeconds: int32(latency.SparkStep / time.Second), Slots: latency.SparkSlots,
		}); err != nil {
			return fmt.Errorf("sparklines: %w", err)
		}
		return nil
	})
}

// mergeSince merges each endpoint's histograms of one resolution since a
// time into one histogram per endpoint.
func (m *maintainer) mergeSince(ctx context.Context, resolution int32, since time.Time) (map[int64]*latency.Histogram, error) {
	rows, err := m.q.LatencySince(ctx, db.LatencySinceParams{ResolutionSeconds: resolution, Since: since})
	if err != nil {
		return nil, err
	}
	out := map[int64]*latency.Histogram{}
	var scratch latency.Histogram
	for _, r := range rows {
		if err := scratch.UnmarshalBinary(r.Buckets); err != nil {
			continue
		}
		h := out[r.EndpointID]
		if h == nil {
			h = &latency.Histogram{}
			out[r.EndpointID] = h
		}
		h.Merge(&scratch)
	}
	return out, nil
}

func quantileMs(h *latency.Histogram, q float64) float64 {
	if h == nil || h.Count() == 0 {
		return -1
	}
	return latency.Ms(h.Quantile(q))
}

func countOf(h *latency.Histogram) int64 {
	if h == nil {
		return 0
	}
	return h.Count()
}

func okOf(h *latency.Histogram) int64 {
	if h == nil {
		return 0
	}
	return h.OK()
}

// RefreshNow flushes in-memory latency and recomputes the cached figures at
// once (tests and benchmarks; the worker does this on its own schedule).
func (w *Worker) RefreshNow(ctx context.Context) error {
	if err := w.maint.flushLatency(ctx); err != nil {
		return err
	}
	return w.maint.refreshHealth(ctx)
}
