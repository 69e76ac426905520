package bench

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker/filter"
)

type paced struct {
	events    int                     // events queued in the measured window
	ids       []uuid.UUID             // the events (not kept by a soak)
	committed map[uuid.UUID]time.Time // when each one's transaction returned
	calls     []time.Duration         // each measured batch's ingest call, start to commit
	backlog   []int                   // undelivered deliveries, each second of the window
	sends     []int                   // requests that reached the receiver in each second of it
}

// pace queues o.Batch events per tick of a ticker set to o.Rate events a
// second, for o.Warmup and then o.Duration. Each batch is its own
// transaction on one of o.Ingesters goroutines; a tick that finds them all
// busy waits, and the ticks it misses are dropped rather than posted in a
// burst later, so the achieved rate falls instead of the spacing. local is
// the worker each batch wakes, as hookline serve's ingest does.
func pace(ctx context.Context, pool *pgxpool.Pool, o SteadyOptions, payload []byte, sent func() int64, local localWorker) (m paced, warm int, window struct{ start, end time.Time }, err error) {
	interval := time.Duration(float64(time.Second) * float64(o.Batch) / float64(o.Rate))
	// With Spread, events take the endpoints' types in turn, across
	// batches.
	var typeOf func(int) string
	if o.Spread {
		var next atomic.Int64
		typeOf = func(int) string { return eventType(int(next.Add(1)-1) % o.Endpoints) }
	}
	m.committed = map[uuid.UUID]time.Time{}
	var cache filter.Cache
	sem := make(chan struct{}, o.Ingesters)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	var lastCommit time.Time

	// The backlog and the requests sent, once a second through the
	// measured window. A soak reports neither second by second, and reads
	// no backlog: that count cost PostgreSQL 0.2 ms through a soak's first
	// minute and up to 7.8 ms after (pg_stat_statements, 1,500
	// deliveries/s), every second, work the soak measured as its own.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan paced, 1)
	sampleFrom := make(chan struct{})

	start := time.Now()
	measureAt := start.Add(o.Warmup)
	end := measureAt.Add(o.Duration)
	go func() {
		var s paced
		defer func() { sampled <- s }()
		select {
		case <-sampleFrom:
		case <-sampleCtx.Done():
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		prev := sent()
		for first := true; ; first = false {
			if !first {
				n := sent()
				s.sends = append(s.sends, int(n-prev))
				prev = n
			}
			if o.Soak == 0 {
				// The posts tick at a fixed phase to this ticker, so the
				// backlog is read at a random point between two of them:
				// read on the tick it would always find the batch just
				// posted not yet queued and the one before already sent.
				select {
				case <-sampleCtx.Done():
					return
				case <-time.After(time.Duration(mrand.Int64N(int64(min(interval, 500*time.Millisecond)) + 1))):
				}
				// Counted through the partial indexes that hold exactly
				// these rows: one count over the statuses is a scan of the
				// whole table, which in a soak reached 0.3–0.6 s of two
				// cores' time every second and grew with the table.
				var n int
				if err := pool.QueryRow(sampleCtx, `SELECT (SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed'))
					+ (SELECT count(*) FROM deliveries WHERE status = 'in_flight')`).Scan(&n); err == nil {
					s.backlog = append(s.backlog, n)
				}
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	inWindow := false
	tick := start
	for {
		if !inWindow && !tick.Before(measureAt) {
			inWindow = true
			window.start = tick
			close(sampleFrom)
		}
		measuredBatch := inWindow
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			posted := time.Now()
			ids, err := ingestBatch(ctx, pool, &cache, o.Batch, payload, typeOf, local)
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			if measuredBatch {
				m.events += len(ids)
				// A soak reports by interval from the tables, and keeps
				// nothing per call or event: its RSS is the worker's, not
				// a record growing with the traffic.
				if o.Soak == 0 {
					m.calls = append(m.calls, at.Sub(posted))
					m.ids = append(m.ids, ids...)
					for _, id := range ids {
						m.committed[id] = at
					}
				}
				if at.After(lastCommit) {
					lastCommit = at
				}
			} else {
				warm += len(ids)
			}
		})
		select {
		case tick = <-ticker.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil || !tick.Before(end) {
			break
		}
	}
	wg.Wait()
	stopSampling()
	series := <-sampled
	m.backlog, m.sends = series.backlog, series.sends
	// The window spans whole ticks, from its first to the one that ended
	// it, or to the last commit if that came later.
	window.end = tick
	if lastCommit.After(tick) {
		window.end = lastCommit
	}
	if err == nil {
		err = firstErr
	}
	if err == nil && !inWindow {
		err = errors.New("steady: nothing was posted in the measured window")
	}
	return m, warm, window, err
}

func cmpErr(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}
