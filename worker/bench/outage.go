package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker"
)

// OutageOptions of `hookline bench -outage N`: N endpoints refuse
// connections for a while as events keep arriving, then come back.
type OutageOptions struct {
	Endpoints int           // default 1,000; every one answers as the mix's healthy ones
	Down      int           // the first Down endpoints go down (default 100)
	For       time.Duration // how long (default 10 min)
	Rate      int           // events per second, each to one endpoint in turn (default 2,000)
	Every     time.Duration // the curve's interval (default 1 min)
	// RecoveryLimit bounds the wait for the backlog to go after the
	// return (default 10 min or twice For): an open breaker probes 5 min
	// after it opened, then at doubling gaps.
	RecoveryLimit time.Duration
	Batch         int
	Ingesters     int
	Concurrency   int
	mixSettings
	DatabaseURL string
	Logger      *slog.Logger
}

// OutageInterval is one interval of the run.
type OutageInterval struct {
	At        time.Duration // its start, since the worker started
	Phase     string        // clean drain, outage, recovery
	PerSecond float64       // 2xx answers of the outage's endpoints per second
	Backlog   int           // their undelivered deliveries at its end
	Fresh     classLatency  // enqueue → 1st attempt of endpoints never down
}

// OutageReport holds an outage run's figures.
type OutageReport struct {
	OutageOptions
	// The clean drain: the backlog an outage leaves, queued before the
	// worker starts, drained with every endpoint up and the same traffic.
	CleanBacklog int
	CleanDrain   time.Duration
	CleanRate    float64
	// The recovery: from the endpoints' return until each one's backlog
	// is gone (Drained false: not within the wait).
	RecoveryBacklog int
	RecoveryDrain   time.Duration
	RecoveryRate    float64
	Drained         bool
	// FirstBack is the return to the first 2xx of a recovered endpoint
	// (an open breaker waits for its probe); SinceFirst the recovery's
	// rate from then on.
	FirstBack  time.Duration
	SinceFirst float64
	// Each recovered endpoint's time to empty its backlog, clean and after
	// the outage.
	CleanEmpty, RecoveryEmpty Percentiles
	RecoveryFirst             time.Duration // the first endpoint's
	Dead                      int           // the outage endpoints' deliveries that ran out of attempts
	Intervals                 []OutageInterval
	Process                   []ProcessSample
}

func (o *OutageOptions) defaults() {
	trafficDefaults(&o.Endpoints, &o.Rate, &o.Batch, &o.Ingesters, &o.Concurrency, &o.Every, &o.Logger)
	o.mixSettings.defaults()
	setDefault(&o.Down, 100)
	setDefault(&o.For, 10*time.Minute)
	setDefault(&o.RecoveryLimit, max(2*o.For, 10*time.Minute))
}

// backlogOf counts each endpoint's undelivered deliveries, in ids' order.
func backlogOf(ctx context.Context, pool *pgxpool.Pool, ids []int64) ([]int, error) {
	rows, err := pool.Query(ctx, `SELECT endpoint_id, count(*) FROM deliveries
		WHERE endpoint_id = ANY($1) AND status IN ('pending', 'failed', 'in_flight') GROUP BY endpoint_id`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	at := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		at[id] = n
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = at[id]
	}
	return out, rows.Err()
}

// Outage runs the outage and its clean reference and writes the report.
func Outage(ctx context.Context, o OutageOptions, out io.Writer) (OutageReport, error) {
	o.defaults()
	r := OutageReport{OutageOptions: o}
	if o.Down >= o.Endpoints {
		return r, fmt.Errorf("outage: %d of %d endpoints down leaves none up", o.Down, o.Endpoints)
	}
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.Ingesters+24), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	pool := bdb.pool

	classes := make([]string, o.Endpoints)
	for i := range classes {
		classes[i] = "healthy"
		if i < o.Down {
			classes[i] = classOutage
		}
	}
	rcv, err := startMixReceiver(classes, rand.New(rand.NewPCG(47, 47)), o.Timeout, time.Minute, time.Second, 1)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	_, box := newRunKey()
	ids, err := seedMix(ctx, pool, box, rcv, o.mixSettings)
	if err != nil {
		return r, err
	}
	downIDs, downEps := ids[:o.Down], rcv.eps[:o.Down]
	groups := make([]string, len(ids))
	for i := range groups {
		groups[i] = "up"
		if i < o.Down {
			groups[i] = "down"
		}
	}
	perEndpoint := float64(o.Rate) / float64(o.Endpoints)
	emptyAt := int(math.Ceil(2*perEndpoint)) + 2 // a backlog this small is the traffic in flight

	// The clean reference's backlog: what the outage will leave, queued
	// to the same endpoints before the worker starts.
	r.CleanBacklog = int(perEndpoint * float64(o.Down) * o.For.Seconds())
	payload := makePayload(512)
	if err := queueSpread(ctx, pool, r.CleanBacklog, o.Down, payload); err != nil {
		return r, err
	}
	if _, err := pool.Exec(ctx, "ANALYZE deliveries; ANALYZE events"); err != nil {
		return r, err
	}
	fmt.Fprintf(out, "outage: %d events/s, each to one of %d endpoints (answers log-normal around medians of 10–500 ms); %d of them down for %s, then back; the clean reference: a backlog of %d queued to those %d before the worker starts; cap %d in flight per endpoint, %d attempts, concurrency %d\n",
		o.Rate, o.Endpoints, o.Down, o.For, r.CleanBacklog, o.Down, o.MaxInFlight, o.MaxAttempts, o.Concurrency)

	w, err := startWorker(ctx, worker.Config{Pool: pool, Box: box, Concurrency: o.Concurrency, Logger: o.Logger})
	if err != nil {
		return r, err
	}
	defer w.stop()
	start := time.Now()
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	samples := sampleProcess(sctx, start, o.Every)
	p := startPoster(ctx, pool, o.Rate, o.Batch, o.Ingesters, o.Endpoints, payload, w)

	// Once a second: the outage endpoints' 2xx answers and backlog.
	var secs []outageSecond
	sent := func() (n int64) {
		for _, e := range downEps {
			n += e.sent2xx.Load()
		}
		return n
	}
	prev := sent()
	// drain waits until every endpoint's backlog has been at most emptyAt
	// once, and returns each one's time to get there.
	drain := func(phase string, from time.Time, limit time.Duration) ([]time.Duration, bool, error) {
		empty := make([]time.Duration, o.Down)
		left := o.Down
		for left > 0 {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-w.exited:
				return nil, false, fmt.Errorf("worker stopped: %v", w.err)
			case <-time.After(time.Second):
			}
			b, err := backlogOf(ctx, pool, downIDs)
			if err != nil {
				return nil, false, err
			}
			n := sent()
			secs = append(secs, outageSecond{time.Since(start), phase, n - prev, sumInts(b)})
			prev = n
			for i, v := range b {
				if empty[i] == 0 && v <= emptyAt {
					empty[i] = time.Since(from)
					left--
				}
			}
			if time.Since(from) > limit {
				return empty, false, nil
			}
		}
		return empty, true, nil
	}
	cleanEmpty, ok, err := drain("clean drain", start, o.For+5*time.Minute)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, fmt.Errorf("outage: the clean backlog of %d did not drain in %s", r.CleanBacklog, o.For+5*time.Minute)
	}
	r.CleanDrain = slices.Max(cleanEmpty)
	r.CleanRate = float64(sumOK(secs)) / r.CleanDrain.Seconds()
	r.CleanEmpty = percentiles(cleanEmpty)

	for _, e := range downEps {
		rcv.down(e)
	}
	downAt := time.Now()
	for time.Since(downAt) < o.For {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Second):
		}
		b, err := backlogOf(ctx, pool, downIDs)
		if err != nil {
			return r, err
		}
		n := sent()
		secs = append(secs, outageSecond{time.Since(start), "outage", n - prev, sumInts(b)})
		prev = n
	}
	for _, e := range downEps {
		if err := rcv.up(e); err != nil {
			return r, fmt.Errorf("outage: listen again on %s: %w", e.addr, err)
		}
	}
	back := time.Now()
	if b, err := backlogOf(ctx, pool, downIDs); err == nil {
		r.RecoveryBacklog = sumInts(b)
	}
	mark := len(secs)
	recEmpty, drained, err := drain("recovery", back, o.RecoveryLimit)
	if err != nil {
		return r, err
	}
	r.Drained = drained
	r.RecoveryDrain = time.Since(back)
	if drained {
		r.RecoveryDrain = slices.Max(recEmpty)
	}
	r.RecoveryRate = float64(sumOK(secs[mark:])) / r.RecoveryDrain.Seconds()
	for _, sec := range secs[mark:] {
		if sec.ok > 0 {
			r.FirstBack = sec.at - back.Sub(start) - time.Second // the second it fell in began then
			if d := r.RecoveryDrain - r.FirstBack; d > 0 {
				r.SinceFirst = float64(sumOK(secs[mark:])) / d.Seconds()
			}
			break
		}
	}
	r.RecoveryEmpty = percentiles(slices.DeleteFunc(recEmpty, func(d time.Duration) bool { return d == 0 }))
	if len(recEmpty) > 0 {
		r.RecoveryFirst = recEmpty[0] // sorted by percentiles
	}
	if _, err := p.end(); err != nil {
		return r, err
	}
	end := time.Now()
	stopSampling()
	r.Process = samples()
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE endpoint_id = ANY($1) AND status = 'dead'", downIDs).Scan(&r.Dead); err != nil {
		return r, err
	}
	select {
	case <-time.After(max(o.Timeout, rcv.tail) + 3*time.Second):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	lat, err := latencyByGroup(ctx, pool, ids, groups, start, end, o.Every)
	if err != nil {
		return r, err
	}
	for k := 0; time.Duration(k)*o.Every < end.Sub(start); k++ {
		iv := OutageInterval{At: time.Duration(k) * o.Every, Fresh: lat[fmt.Sprintf("up/%d", k)]}
		var n int64
		var secsIn int
		for _, s := range secs {
			if s.at > iv.At && s.at <= iv.At+o.Every {
				n += s.ok
				secsIn++
				iv.Backlog, iv.Phase = s.backlog, s.phase
			}
		}
		if secsIn > 0 {
			iv.PerSecond = float64(n) / float64(secsIn)
		}
		r.Intervals = append(r.Intervals, iv)
	}
	r.print(out)
	return r, nil
}

func sumInts(v []int) (n int) {
	for _, x := range v {
		n += x
	}
	return n
}

// outageSecond is one second of an outage run.
type outageSecond struct {
	at      time.Duration
	phase   string
	ok      int64 // 2xx answers of the outage's endpoints
	backlog int   // their undelivered deliveries
}

func sumOK(s []outageSecond) (n int64) {
	for _, x := range s {
		n += x.ok
	}
	return n
}

func (r OutageReport) print(out io.Writer) {
	fmt.Fprintf(out, "  clean drain: %d queued, every endpoint's backlog gone in %.1f s: %.0f deliveries/s to them (each endpoint's time to empty p50 %.1f s, max %.1f s)\n",
		r.CleanBacklog, r.CleanDrain.Seconds(), r.CleanRate, r.CleanEmpty.P50.Seconds(), r.CleanEmpty.Max.Seconds())
	state := "gone"
	if !r.Drained {
		state = "NOT gone"
	}
	fmt.Fprintf(out, "  recovery: %d left at the return, every endpoint's backlog %s in %.1f s: %.0f deliveries/s to them = %.2f × the clean drain (each endpoint's time to empty p50 %.1f s, max %.1f s, min %.1f s); %d ran out of attempts\n",
		r.RecoveryBacklog, state, r.RecoveryDrain.Seconds(), r.RecoveryRate, r.RecoveryRate/r.CleanRate, r.RecoveryEmpty.P50.Seconds(), r.RecoveryEmpty.Max.Seconds(), r.RecoveryFirst.Seconds(), r.Dead)
	fmt.Fprintf(out, "  the first 2xx after the return came %.1f s after it; from then %.0f deliveries/s to them = %.2f × the clean drain\n",
		r.FirstBack.Seconds(), r.SinceFirst, r.SinceFirst/r.CleanRate)
	fmt.Fprintf(out, "  %-8s %-12s %12s %9s %11s %11s %11s\n", "from", "phase", "2xx/s down", "backlog", "fresh p50", "fresh p99", "fresh n")
	for _, iv := range r.Intervals {
		fmt.Fprintf(out, "  %-8s %-12s %12.0f %9d %8s ms %8s ms %11d\n", iv.At, iv.Phase, iv.PerSecond, iv.Backlog, fmtMs(iv.Fresh.P50), fmtMs(iv.Fresh.P99), iv.Fresh.Attempted)
	}
	fmt.Fprintf(out, "  (2xx/s down: answers of the endpoints that go down, per second; fresh: enqueue → 1st attempt of events to endpoints never down, by when they were queued; the phase is the interval's last)\n")
	fmt.Fprintf(out, "  %-8s %10s %10s\n", "at", "RSS", "goroutines")
	for _, s := range r.Process {
		fmt.Fprintf(out, "  %-8s %10s %10d\n", s.At, mib(s.RSS), s.Goroutines)
	}
}
