package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker/filter"
)

// ScaleOptions of `hookline bench -scale`: the cost of a delivery and the
// wait for its first attempt as the work around it grows, against a
// reference of Reference endpoints and no retained rows measured first in
// the same run.
type ScaleOptions struct {
	Reference int     // endpoints of the reference and of the retained cases (default 100)
	Endpoints []int   // endpoint cases (default 10,000 and 100,000)
	Retained  []int64 // delivered deliveries retained, one case each (default 1 and 10 million)
	// Deliveries is each case's drain, the events spread over its
	// endpoints one each (default 20,000).
	Deliveries int
	// Rate is the steady rate (default 1,000 events/s, each to one
	// endpoint in turn) for Duration after Warmup.
	Rate             int
	Duration, Warmup time.Duration
	Concurrency      int // the worker's sends in flight (default 256)
	DatabaseURL      string
	Logger           *slog.Logger
}

func (o *ScaleOptions) defaults() {
	setDefault(&o.Reference, 100)
	if o.Endpoints == nil {
		o.Endpoints = []int{10_000, 100_000}
	}
	if o.Retained == nil {
		o.Retained = []int64{1_000_000, 10_000_000}
	}
	setDefault(&o.Deliveries, 20000)
	setDefault(&o.Rate, 1000)
	setDefault(&o.Duration, 20*time.Second)
	setDefault(&o.Warmup, min(2*time.Second, o.Duration/5))
	setDefault(&o.Concurrency, 256)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// ScaleCase is one case's figures.
type ScaleCase struct {
	Endpoints int
	Retained  int64         // delivered deliveries retained beside the work
	Setup     time.Duration // creating the endpoints and the retained rows
	// Drain is the drain of Options.Deliveries; WorkerCPU and DatabaseCPU
	// its CPU time per delivery in this process (worker, sender and the
	// loopback receiver) and in the private cluster (0 on DatabaseURL).
	Drain                  Phase
	WorkerCPU, DatabaseCPU time.Duration
	// Steady is the steady rate's report: enqueue → first attempt.
	Steady SteadyReport
}

// Name names the case in the report.
func (c ScaleCase) Name() string {
	return fmt.Sprintf("%d endpoints, %s retained", c.Endpoints, count(c.Retained))
}

// ScaleReport holds a scale run's figures; Cases[0] is the reference.
type ScaleReport struct {
	ScaleOptions
	Cases []ScaleCase
}

// Scale runs the reference and every case on one private cluster, one
// after another, and writes the table.
func Scale(ctx context.Context, o ScaleOptions, out io.Writer) (ScaleReport, error) {
	o.defaults()
	r := ScaleReport{ScaleOptions: o}
	cases := []ScaleCase{{Endpoints: o.Reference}}
	for _, n := range o.Endpoints {
		cases = append(cases, ScaleCase{Endpoints: n})
	}
	for _, n := range o.Retained {
		cases = append(cases, ScaleCase{Endpoints: o.Reference, Retained: n})
	}
	for _, c := range cases {
		if c.Endpoints < 1 || c.Retained < 0 {
			return r, fmt.Errorf("scale: %d endpoints, %d retained: want at least 1 endpoint and no fewer than 0 rows", c.Endpoints, c.Retained)
		}
	}
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", 40, o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	rcv, err := newReceiver(0)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	fmt.Fprintf(out, "cost as work grows: per case, a drain of %d deliveries (each event to one endpoint in turn) and %d events/s for %s after a %s warm-up; concurrency %d\n",
		o.Deliveries, o.Rate, o.Duration, o.Warmup, o.Concurrency)
	for i := range cases {
		if err := scaleCase(ctx, bdb, rcv, o, &cases[i], out); err != nil {
			return r, fmt.Errorf("%s: %w", cases[i].Name(), err)
		}
		r.Cases = append(r.Cases, cases[i])
	}
	r.print(out)
	return r, nil
}

// scaleCase sets up one case and measures it: its endpoints, a warm-up
// drain (the worker makes the partitions of today's spans, so that the
// retained rows land in them as a running service's do), the retained
// rows, the drain and the steady rate.
func scaleCase(ctx context.Context, bdb benchDB, rcv *receiver, o ScaleOptions, c *ScaleCase, out io.Writer) error {
	pool := bdb.pool
	key, box := newRunKey()
	start := time.Now()
	if err := seedMany(ctx, pool, box, rcv.url, c.Endpoints, o.Concurrency); err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}
	do := Options{Deliveries: o.Deliveries, Endpoints: c.Endpoints, Concurrency: o.Concurrency, Logger: o.Logger}
	payload := makePayload(512)
	warm := do
	warm.Deliveries = min(o.Deliveries/4, 5000)
	if err := queueAndAnalyze(ctx, pool, warm, payload); err != nil {
		return err
	}
	if _, err := runWorker(ctx, pool, key, loopbackGuard(), rcv, warm, func() {}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := reset(ctx, pool); err != nil {
		return err
	}
	if c.Retained > 0 {
		p0 := time.Now()
		inDefault, err := populateDelivered(ctx, pool, c.Retained, c.Endpoints)
		if err != nil {
			return fmt.Errorf("retained rows: %w", err)
		}
		fmt.Fprintf(out, "  %s: %d delivered deliveries with their events and attempts written in %.1f s (%d of them in a default partition)\n",
			c.Name(), c.Retained, time.Since(p0).Seconds(), inDefault)
	}
	c.Setup = time.Since(start)

	if err := queueAndAnalyze(ctx, pool, do, payload); err != nil {
		return err
	}
	var err error
	c.Drain, c.WorkerCPU, c.DatabaseCPU, err = measured(bdb.postmaster, func(end func()) (Phase, error) {
		return runWorker(ctx, pool, key, loopbackGuard(), rcv, do, end)
	})
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	// The drain's rows stay delivered, beside the retained ones; the
	// steady rate's endpoints answer at its own receiver.
	c.Steady, err = Steady(ctx, SteadyOptions{
		Rate: o.Rate, Duration: o.Duration, Warmup: o.Warmup, Endpoints: c.Endpoints, Spread: true,
		Concurrency: o.Concurrency, Logger: o.Logger, on: &bdb, box: box,
		reseat: func(ctx context.Context, pool *pgxpool.Pool, rcv *receiver) error {
			_, err := pool.Exec(ctx, `UPDATE endpoints SET url = $1 || '/' || name`, rcv.url)
			return err
		},
	}, io.Discard)
	if err != nil {
		return fmt.Errorf("steady rate: %w", err)
	}
	fmt.Fprintf(out, "  %-36s drain %6.0f/s, CPU per delivery %s, PostgreSQL %s; enqueue → 1st attempt p50 %s, p99 %s ms\n",
		c.Name(), c.Drain.PerSecond(), usText(c.WorkerCPU), usText(c.DatabaseCPU), fmtMs(c.Steady.EnqueueToAttempt.P50), fmtMs(c.Steady.EnqueueToAttempt.P99))
	return nil
}

// queueSpread queues n events through the ingest statements, event i to
// endpoint i mod endpoints alone (endpoint i takes eventType(i)), in
// transactions of 1,000 as POST /api/v1/events/batch takes them.
func queueSpread(ctx context.Context, pool *pgxpool.Pool, n, endpoints int, payload []byte) error {
	var cache filter.Cache
	for done := 0; done < n; done += 1000 {
		size := min(1000, n-done)
		typeOf := func(i int) string { return eventType((done + i) % endpoints) }
		if err := withConn(ctx, pool, func(conn *pgxpool.Conn) error {
			_, err := ingest(ctx, conn, &cache, size, payload, typeOf, nil)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// queueAndAnalyze queues o.Deliveries over o.Endpoints (queueSpread) and
// refreshes the statistics, as queue does.
func queueAndAnalyze(ctx context.Context, pool *pgxpool.Pool, o Options, payload []byte) error {
	if err := queueSpread(ctx, pool, o.Deliveries, o.Endpoints, payload); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "ANALYZE deliveries; ANALYZE events; ANALYZE endpoints; ANALYZE endpoint_health")
	return err
}

// print writes the table: each case's figures and their ratio to the
// reference's.
func (r ScaleReport) print(out io.Writer) {
	if len(r.Cases) == 0 {
		return
	}
	ref := r.Cases[0]
	ratio := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "   –"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	fmt.Fprintf(out, "  %-36s %22s %22s %22s %22s\n", "case", "worker µs/delivery", "PostgreSQL µs/delivery", "enqueue→1st p50 ms", "enqueue→1st p99 ms")
	for _, c := range r.Cases {
		l, rl := c.Steady.EnqueueToAttempt, ref.Steady.EnqueueToAttempt
		fmt.Fprintf(out, "  %-36s %13s (%6s) %13s (%6s) %13s (%6s) %13s (%6s)\n", c.Name(),
			usText(c.WorkerCPU), ratio(us(c.WorkerCPU), us(ref.WorkerCPU)),
			usText(c.DatabaseCPU), ratio(us(c.DatabaseCPU), us(ref.DatabaseCPU)),
			fmtMs(l.P50), ratio(float64(l.P50), float64(rl.P50)),
			fmtMs(l.P99), ratio(float64(l.P99), float64(rl.P99)))
	}
	fmt.Fprintf(out, "  (ratios to the first row, the reference; the target is at most %.1f×)\n", MaxScaleRatio)
}

// MaxScaleRatio is issue 47's target: each case within this much of the
// reference.
const MaxScaleRatio = 1.2

func usText(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", us(d))
}

// count writes n as 0, 20k, 1M, 10M.
func count(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
