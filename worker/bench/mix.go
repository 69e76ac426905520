package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/simulate"
)

// MixOptions of `hookline bench -profile mix`: events spread over endpoints
// that answer as partners do, at a steady rate.
type MixOptions struct {
	Endpoints   int           // default 1,000
	Rate        int           // events per second, each to one endpoint in turn (default 2,000)
	Duration    time.Duration // measured window (default 10 min)
	Warmup      time.Duration // posted first, left out of the figures (default a fifth of Duration, at most 10 s)
	Hanging     int           // endpoints that hang until the timeout (default 1 %)
	Failing     int           // endpoints that fail with 503 in bursts (default 1 %)
	Every       time.Duration // RSS and goroutines sampled this often (default 1 min)
	Batch       int
	Ingesters   int
	Concurrency int
	// BurstEvery and BurstFor shape the failing class: BurstFor of 503s
	// every BurstEvery, at a phase of its own per endpoint (default 20 s
	// of every 60 s).
	BurstEvery, BurstFor time.Duration
	mixSettings
	DatabaseURL string
	Logger      *slog.Logger
	Seed        uint64 // the endpoints' medians and phases
}

func (o *MixOptions) defaults() {
	trafficDefaults(&o.Endpoints, &o.Rate, &o.Batch, &o.Ingesters, &o.Concurrency, &o.Every, &o.Logger)
	o.mixSettings.defaults()
	if o.Hanging < 0 {
		o.Hanging = 0
	} else if o.Hanging == 0 {
		o.Hanging = max(1, o.Endpoints/100)
	}
	if o.Failing < 0 {
		o.Failing = 0
	} else if o.Failing == 0 {
		o.Failing = max(1, o.Endpoints/100)
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Warmup <= 0 {
		o.Warmup = min(10*time.Second, o.Duration/5)
	}
	if o.BurstEvery <= 0 {
		o.BurstEvery = time.Minute
	}
	if o.BurstFor <= 0 || o.BurstFor >= o.BurstEvery {
		o.BurstFor = o.BurstEvery / 3
	}
	if o.Seed == 0 {
		o.Seed = 47
	}
}

// MixClass is one class's figures.
type MixClass struct {
	Class            string
	Endpoints        int
	EnqueueToAttempt classLatency // deliveries of the window's events
	Requests, OK     int64        // as the receiver saw them, the whole run
	MaxInFlight      int64        // the most in flight at one endpoint of the class
}

// MixReport holds a mix run's figures.
type MixReport struct {
	MixOptions
	Events       int     // queued in the window
	AchievedRate float64 // events/s in the window
	Classes      []MixClass
	Process      []ProcessSample
	// DownDelivered counts deliveries recorded as delivered to the down
	// endpoint (none can be); TooMany the 429s the rate-limited endpoint
	// answered, Early the requests it got inside a Retry-After it had
	// asked for (more than limitedGrace after the 429).
	DownDelivered  int
	TooMany, Early int64
}

// mixClassesOf lays out the classes: hanging, failing, the down and the
// rate-limited endpoint first, then the healthy ones by their medians.
func mixClassesOf(o MixOptions) []string {
	c := make([]string, o.Endpoints)
	i := 0
	put := func(class string, n int) {
		for ; n > 0 && i < len(c); n-- {
			c[i] = class
			i++
		}
	}
	put(classHanging, o.Hanging)
	put(classFailing, o.Failing)
	put(classDown, 1)
	put(classLimited, 1)
	put("healthy", len(c))
	return c
}

// Mix runs the receiver mix and writes its report to out.
func Mix(ctx context.Context, o MixOptions, out io.Writer) (MixReport, error) {
	o.defaults()
	r := MixReport{MixOptions: o}
	if o.Endpoints < o.Hanging+o.Failing+3 {
		return r, fmt.Errorf("mix: %d endpoints leave none healthy beside %d hanging, %d failing, 1 down and 1 rate-limited", o.Endpoints, o.Hanging, o.Failing)
	}
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.Ingesters+24), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	pool := bdb.pool

	rnd := rand.New(rand.NewPCG(o.Seed, 47))
	perEndpoint := float64(o.Rate) / float64(o.Endpoints)
	// The rate-limited partner accepts a quarter of its share: most
	// requests are refused unless the worker honours its Retry-After.
	rcv, err := startMixReceiver(mixClassesOf(o), rnd, o.Timeout, o.BurstEvery, o.BurstFor, max(perEndpoint/4, 0.2))
	if err != nil {
		return r, err
	}
	defer rcv.close()
	for _, e := range rcv.eps {
		if e.class == "healthy" {
			e.class = healthyClass(e.median)
		}
	}
	_, box := newRunKey()
	ids, err := seedMix(ctx, pool, box, rcv, o.mixSettings)
	if err != nil {
		return r, err
	}
	count := map[string]int{}
	groups := make([]string, len(ids))
	for i, e := range rcv.eps {
		count[e.class]++
		groups[i] = e.class
	}
	fmt.Fprintf(out, "receiver mix: %d events/s, each to one of %d endpoints (%d fast, %d slow: medians 10–500 ms, log-normal tail to %s; %d hanging, %d failing in bursts of %s every %s, 1 down, 1 rate-limited at %.2f/s with Retry-After %s) for %s after a %s warm-up; cap %d in flight per endpoint, timeout %s, concurrency %d\n",
		o.Rate, o.Endpoints, count[classFast], count[classSlow], rcv.tail, count[classHanging], count[classFailing], o.BurstFor, o.BurstEvery,
		max(perEndpoint/4, 0.2), simulate.RetryAfter, o.Duration, o.Warmup, o.MaxInFlight, o.Timeout, o.Concurrency)

	w, err := startWorker(ctx, worker.Config{Pool: pool, Box: box, Concurrency: o.Concurrency, Logger: o.Logger})
	if err != nil {
		return r, err
	}
	defer w.stop()

	start := time.Now()
	windowStart := start.Add(o.Warmup)
	windowEnd := windowStart.Add(o.Duration)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	p := startPoster(ctx, pool, o.Rate, o.Batch, o.Ingesters, o.Endpoints, makePayload(512), w)
	var samples func() []ProcessSample
	select {
	case <-time.After(time.Until(windowStart)):
	case <-ctx.Done():
	}
	samples = sampleProcess(sctx, windowStart, o.Every)
	var before int
	p.mu.Lock()
	before = p.events
	p.mu.Unlock()
	select {
	case <-time.After(time.Until(windowEnd)):
	case <-ctx.Done():
	case <-w.exited:
	}
	total, err := p.end()
	stopSampling()
	r.Process = samples()
	if err != nil {
		return r, err
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	r.Events = total - before
	r.AchievedRate = float64(r.Events) / o.Duration.Seconds()
	// Hanging sends end at the timeout and the healthy tail at tailCap:
	// by then every first attempt of the window's last events is recorded
	// (the down endpoint's, behind its open breaker, may never be).
	select {
	case <-time.After(max(o.Timeout, rcv.tail) + 3*time.Second):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	lat, err := latencyByGroup(ctx, pool, ids, groups, windowStart, windowEnd, 0)
	if err != nil {
		return r, err
	}
	for _, c := range mixClasses {
		if count[c] == 0 {
			continue
		}
		mc := MixClass{Class: c, Endpoints: count[c], EnqueueToAttempt: lat[c]}
		for _, e := range rcv.eps {
			if e.class == c {
				mc.Requests += e.requests.Load()
				mc.OK += e.ok.Load()
				mc.MaxInFlight = max(mc.MaxInFlight, e.maxInFlight.Load())
			}
			if e.class == classLimited {
				r.TooMany, r.Early = e.tooMany.Load(), e.early.Load()
			}
		}
		r.Classes = append(r.Classes, mc)
	}
	for i, e := range rcv.eps {
		if e.class == classDown {
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'", ids[i]).Scan(&r.DownDelivered); err != nil {
				return r, err
			}
		}
	}
	r.print(out)
	if r.Events == 0 {
		return r, errors.New("mix: nothing was posted in the window")
	}
	return r, nil
}

func (r MixReport) print(out io.Writer) {
	fmt.Fprintf(out, "  events queued %d in %s (%.0f/s; asked %d)\n", r.Events, r.Duration, r.AchievedRate, r.Rate)
	fmt.Fprintf(out, "  %-13s %9s %11s %10s %8s %8s %8s %10s %10s %13s\n", "class", "endpoints", "deliveries", "attempted", "p50 ms", "p99 ms", "max ms", "requests", "2xx", "max in flight")
	for _, c := range r.Classes {
		l := c.EnqueueToAttempt
		fmt.Fprintf(out, "  %-13s %9d %11d %10d %8s %8s %8s %10d %10d %8d of %d\n", c.Class, c.Endpoints, l.Deliveries, l.Attempted,
			fmtMs(l.P50), fmtMs(l.P99), fmtMs(l.Max), c.Requests, c.OK, c.MaxInFlight, r.MaxInFlight)
	}
	fmt.Fprintf(out, "  (enqueue → 1st attempt of the window's events; requests, 2xx and the most in flight at one endpoint as the receiver saw them)\n")
	fmt.Fprintf(out, "  down endpoint: %d delivered; rate-limited endpoint: %d answers 429, %d requests inside a Retry-After it asked for\n", r.DownDelivered, r.TooMany, r.Early)
	fmt.Fprintf(out, "  %-8s %10s %10s\n", "at", "RSS", "goroutines")
	for _, s := range r.Process {
		fmt.Fprintf(out, "  %-8s %10s %10d\n", s.At, mib(s.RSS), s.Goroutines)
	}
}
