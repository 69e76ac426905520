package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/worker"
)

// Steady queues events at o.Rate per second, in transactions of o.Batch
// events through the batch API's ingest statements, while hookline's worker
// delivers them to a loopback receiver; it writes a report to out.
func Steady(ctx context.Context, o SteadyOptions, out io.Writer) (SteadyReport, error) {
	o.defaults()
	r := SteadyReport{SteadyOptions: o}
	if o.Rate <= 0 || o.Duration <= 0 {
		return r, errors.New("steady: rate and duration must be positive")
	}
	if o.RetainDelivered > 0 && (o.Soak == 0 || o.RetainDelivered < 3*o.Soak) {
		return r, errors.New("steady: RetainDelivered needs a soak and at least three of its intervals")
	}

	var bdb benchDB
	if o.on != nil {
		bdb = *o.on
	} else {
		var err error
		if bdb, err = openBenchDB(ctx, o.DatabaseURL, "", int32(o.Ingesters+24), o.Logger, out); err != nil {
			return r, err
		}
		defer bdb.close()
	}
	pool := bdb.pool

	var arr *arrivals
	if o.Soak == 0 {
		arr = &arrivals{at: map[string]time.Time{}}
	}
	// A soak reads each interval's per-second p99s from the timeline,
	// written out only when asked for.
	var tl *timeline
	if o.Timeline != nil || o.Soak > 0 {
		tl = &timeline{}
	}
	rcv, err := newTimingReceiver(o.ReceiverDelay, arr, tl, o.tls)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	guard := loopbackGuard()
	box := o.box
	payload := makePayload(o.PayloadBytes)
	if o.reseat != nil {
		if err := o.reseat(ctx, pool, rcv); err != nil {
			return r, err
		}
	} else {
		_, box = newRunKey()
		if err := seed(ctx, pool, box, rcv, Options{Endpoints: o.Endpoints, Concurrency: o.Concurrency, Spread: o.Spread}); err != nil {
			return r, err
		}
	}

	fanout, each := o.Endpoints, "×"
	if o.Spread {
		fanout, each = 1, "spread over"
	}
	fmt.Fprintf(out, "steady rate %d events/s %s %d endpoints for %s (after a %s warm-up), batches of %d, payload %d B, receiver answers after %s\n",
		o.Rate, each, o.Endpoints, o.Duration, o.Warmup, o.Batch, len(payload), o.ReceiverDelay)

	w, err := startWorker(ctx, worker.Config{
		Pool: pool, Box: box, Guard: guard,
		Concurrency: o.Concurrency, Logger: o.Logger,
		Retention: worker.Retention{Delivered: o.RetainDelivered, Every: o.retentionEvery},
	})
	if err != nil {
		return r, err
	}
	defer w.stop()

	windowStart := time.Now().Add(o.Warmup)
	if tl != nil {
		tl.begin(windowStart)
	}
	var soak *soakSampler
	if o.Soak > 0 {
		soak = startSoakSampler(ctx, pool, bdb.postmaster, o.Soak, windowStart, o.Warmup, rcv.count.Load, o.RetainDelivered > 0 && !o.NoLiveReads)
	}
	measured, warm, window, err := pace(ctx, pool, o, payload, rcv.count.Load, w)
	if soak != nil {
		soak.stop()
	}
	if err != nil {
		return r, err
	}
	postedAt := time.Now()
	r.WarmupEvents, r.Events, r.Window = warm, measured.events, window.end.Sub(window.start)
	r.Deliveries = r.Events * fanout
	r.AchievedRate = float64(r.Events) / r.Window.Seconds()
	if len(measured.backlog) > 0 {
		r.BacklogFirst, r.BacklogLast = measured.backlog[0], measured.backlog[len(measured.backlog)-1]
		r.BacklogMax = slices.Max(measured.backlog)
	}
	r.Backlog, r.Sends = measured.backlog, measured.sends
	if len(measured.sends) > 0 {
		r.SendsMin, r.SendsMax = slices.Min(measured.sends), slices.Max(measured.sends)
	}

	// Wait until every delivery queued (warm-up included) is recorded.
	target := int64(warm+r.Events) * int64(fanout)
	deadline := time.Now().Add(10*time.Minute + o.Duration)
	secAt, secCount := time.Now(), rcv.count.Load()
	for {
		if now := time.Now(); now.Sub(secAt) >= time.Second {
			n := rcv.count.Load()
			r.DrainSends = append(r.DrainSends, int(n-secCount))
			secAt, secCount = now, n
		}
		if rcv.count.Load() >= target {
			n, err := remaining(ctx, pool)
			if err != nil {
				return r, err
			}
			if n == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("steady: %d of %d requests arrived; the queue did not drain", rcv.count.Load(), target)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-w.exited:
			return r, fmt.Errorf("worker stopped: %v", w.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.Drain = time.Since(postedAt)
	if o.Timeline != nil {
		if err := tl.write(o.Timeline); err != nil {
			return r, fmt.Errorf("write the timeline: %w", err)
		}
	}
	if soak != nil {
		return r, soak.report(ctx, pool, tl, &r, out)
	}

	rows, err := pool.Query(ctx, `
		SELECT d.event_id, e.name, ev.created_at, min(a.started_at)
		FROM deliveries d
		JOIN events ev ON ev.id = d.event_id
		JOIN endpoints e ON e.id = d.endpoint_id
		JOIN delivery_attempts a ON a.delivery_id = d.id
		WHERE d.event_id = ANY($1) AND d.status = 'delivered'
		GROUP BY d.id, d.event_id, e.name, ev.created_at`, measured.ids)
	if err != nil {
		return r, err
	}
	var toAttempt, toReceipt, fromCommit, toCommit []time.Duration
	counted := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		var name string
		var created, first time.Time
		if err := rows.Scan(&id, &name, &created, &first); err != nil {
			rows.Close()
			return r, err
		}
		toAttempt = append(toAttempt, first.Sub(created))
		fromCommit = append(fromCommit, first.Sub(measured.committed[id]))
		if !counted[id] {
			counted[id] = true
			toCommit = append(toCommit, measured.committed[id].Sub(created))
		}
		if at, ok := arr.get(id.String(), "/"+name); ok {
			toReceipt = append(toReceipt, at.Sub(created))
		}
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	r.Delivered = len(toAttempt)
	r.EnqueueToAttempt, r.IngestToReceipt = percentiles(toAttempt), percentiles(toReceipt)
	r.CommitToAttempt = percentiles(fromCommit)
	r.EnqueueToCommit = percentiles(toCommit)
	r.IngestCall = percentiles(measured.calls)
	if r.Delivered != r.Deliveries || r.IngestToReceipt.Count != r.Deliveries {
		return r, fmt.Errorf("steady: %d deliveries queued, %d recorded as delivered, %d matched at the receiver", r.Deliveries, r.Delivered, r.IngestToReceipt.Count)
	}

	r.BacklogGrew = backlogGrew(r.Backlog, o.Rate*fanout)
	r.print(out, fanout)
	return r, nil
}
