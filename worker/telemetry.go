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
)

// Histogram resolutions stored in latency_histograms.
const (
	resMinute = 60
	resSlot   = 900 // sparkline points
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

// flushLatency merges the in-memory minute histograms into the stored
// minute, 15-minute and hourly slots. Rows are created if missing, then read
// and locked in key order, merged in Go (buckets are an opaque encoding) and
// written back, all in one transaction. On failure the drained data is put
// back, so nothing is lost to a database hiccup.
func (w *Worker) flushLatency(ctx context.Context) error {
	drained := w.recorder.Drain()
	if len(drained) == 0 {
		return nil
	}
	slots := map[slotKey]*latency.Histogram{}
	for k, h := range drained {
		for _, res := range []int32{resMinute, resSlot, resHour} {
			sk := slotKey{k.EndpointID, res, k.Minute.UTC().Truncate(time.Duration(res) * time.Second)}
			if slots[sk] == nil {
				slots[sk] = &latency.Histogram{}
			}
			slots[sk].Merge(h)
		}
	}
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

	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.q.WithTx(tx)
		if err := q.LatencySlotsEnsure(ctx, db.LatencySlotsEnsureParams{EndpointIds: ids, Resolutions: resolutions, BucketStarts: starts}); err != nil {
			return fmt.Errorf("create slots: %w", err)
		}
		stored, err := q.LatencySlotsLock(ctx, db.LatencySlotsLockParams{EndpointIds: ids, Resolutions: resolutions, BucketStarts: starts})
		if err != nil {
			return fmt.Errorf("lock slots: %w", err)
		}
		var p db.LatencySlotsWriteParams
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
					w.log.Error("corrupt latency histogram replaced", "endpoint_id", r.EndpointID, "err", err)
				} else {
					merged.Merge(&scratch)
				}
			}
			merged.Merge(add)
			enc, err := merged.MarshalBinary()
			if err != nil {
				return err
			}
			p.EndpointIds = append(p.EndpointIds, k.endpointID)
			p.Resolutions = append(p.Resolutions, k.resolution)
			p.BucketStarts = append(p.BucketStarts, r.BucketStart)
			p.Counts = append(p.Counts, merged.Count())
			p.OkCounts = append(p.OkCounts, merged.OK())
			p.FailCounts = append(p.FailCounts, merged.Fail())
			p.SumsMs = append(p.SumsMs, ms(merged.Sum()))
			p.P50sMs = append(p.P50sMs, ms(merged.Quantile(0.50)))
			p.P95sMs = append(p.P95sMs, ms(merged.Quantile(0.95)))
			p.P99sMs = append(p.P99sMs, ms(merged.Quantile(0.99)))
			p.Buckets = append(p.Buckets, enc)
		}
		return q.LatencySlotsWrite(ctx, p)
	})
	if err != nil {
		w.recorder.Restore(drained)
		return err
	}
	return nil
}

// refreshHealth recomputes every endpoint's cached latency: P50/P95/P99 over
// the rolling 24 h (merged hourly buckets), the recent P95 (merged minute
// buckets of the last 10 minutes; the early warning), and the 24 h
// sparklines (96 slots of 15 minutes).
func (w *Worker) refreshHealth(ctx context.Context) error {
	now := w.now().UTC()
	day, err := w.mergeSince(ctx, resHour, now.Truncate(time.Hour).Add(-window24h+time.Hour))
	if err != nil {
		return err
	}
	recent, err := w.mergeSince(ctx, resMinute, now.Truncate(time.Minute).Add(-recentWindow+time.Minute))
	if err != nil {
		return err
	}
	var p db.EndpointHealthSetLatencyParams
	p.Now = w.dbNow()
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
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.q.WithTx(tx)
		if len(ids) > 0 {
			if err := q.EndpointHealthSetLatency(ctx, p); err != nil {
				return fmt.Errorf("set latency: %w", err)
			}
		}
		if err := q.EndpointHealthClearLatency(ctx, db.EndpointHealthClearLatencyParams{Now: w.dbNow(), KeepIds: ids}); err != nil {
			return fmt.Errorf("clear latency: %w", err)
		}
		start := now.Truncate(resSlot * time.Second).Add(-95 * resSlot * time.Second)
		if err := q.EndpointHealthSetSparklines(ctx, start); err != nil {
			return fmt.Errorf("sparklines: %w", err)
		}
		return nil
	})
}

// mergeSince merges each endpoint's histograms of one resolution since a
// time into one histogram per endpoint.
func (w *Worker) mergeSince(ctx context.Context, resolution int32, since time.Time) (map[int64]*latency.Histogram, error) {
	rows, err := w.q.LatencySince(ctx, db.LatencySinceParams{ResolutionSeconds: resolution, Since: since})
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
	return ms(h.Quantile(q))
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RefreshNow flushes in-memory latency and recomputes the cached figures at
// once (tests and benchmarks; the worker does this on its own schedule).
func (w *Worker) RefreshNow(ctx context.Context) error {
	if err := w.flushLatency(ctx); err != nil {
		return err
	}
	return w.refreshHealth(ctx)
}
