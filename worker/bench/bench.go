// Package bench measures delivery throughput: hookline's worker against the
// raw loopback HTTP ceiling (the same requests, no database), against a
// bare batched worker (the same rows stored per delivery, none of
// hookline's features) and against a naive worker that claims, sends and
// records one row per transaction, all in one run on one machine, so the
// ratios mean something on a noisy host.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hookline/hookline/worker/sender"
)

// Options of a run.
type Options struct {
	Deliveries   int // total deliveries (default 20,000)
	Endpoints    int // endpoints they spread over (default 100)
	Concurrency  int // sends in flight (default 256)
	PayloadBytes int // size of each event payload (default 512)
	// NaiveConcurrency bounds the naive worker, which holds a connection
	// per send (default 64).
	NaiveConcurrency int
	// NaiveDuration is how long the naive worker runs (default 10 s).
	NaiveDuration time.Duration
	// ReceiverDelay is how long the receiver takes to answer (default 0:
	// the CPU-bound case). Real partners take milliseconds to seconds.
	ReceiverDelay time.Duration
	// DatabaseURL, when set, is used instead of a private cluster (its
	// data is truncated). Leave empty for the published figures: a fresh
	// private cluster with fsync on.
	DatabaseURL string
	// Filter puts a payload filter on every endpoint, one every bench event
	// passes (so the same deliveries are queued), to measure what
	// evaluating filters at fan-out costs ingest.
	Filter bool
	// Spread subscribes each endpoint to its own event type
	// (conversion.<i>), so that an event queued with eventType(i) goes to
	// endpoint i only.
	Spread bool
	// CPUProfile, when set, receives a pprof CPU profile of the worker
	// phase alone.
	CPUProfile io.Writer
	// Processes adds the deployed topology to the run: hookline web,
	// hookline worker and the receiver each in a process of its own,
	// started from Executable (the hookline binary), the events queued
	// through the API (see processes).
	Processes  bool
	Executable string
	Logger     *slog.Logger
	// sender, when set, is the sender of the raw phase and of every
	// worker, kept from one to the next with its connections (the HTTPS
	// bench: a drain of deliveries over connections the warm-up opened).
	sender *sender.Sender
}

// Report holds one run's figures.
type Report struct {
	Options
	Raw, Worker, Bare, Naive Phase
	Ingest                   Phase // queueing the deliveries through the ingest statements
	// CPU time per request (raw) and per delivery (worker) of this process,
	// which holds the receiver too, and per delivery of the private
	// PostgreSQL cluster (0 with DatabaseURL).
	RawCPU, WorkerCPU, DatabaseCPU time.Duration
	// The same for the bare worker.
	BareCPU, BareDatabaseCPU time.Duration
	Deployed                 Deployed // with Options.Processes
}

// Phase is one measurement.
type Phase struct {
	Count    int
	Duration time.Duration
}

// PerSecond is the phase's throughput.
func (p Phase) PerSecond() float64 {
	if p.Duration <= 0 {
		return 0
	}
	return float64(p.Count) / p.Duration.Seconds()
}

func (o *Options) defaults() {
	setDefault(&o.Deliveries, 20000)
	loadDefaults(&o.Endpoints, &o.Concurrency, &o.PayloadBytes, &o.Logger)
	setDefault(&o.NaiveConcurrency, 64)
	setDefault(&o.NaiveDuration, 10*time.Second)
	o.Deliveries -= o.Deliveries % o.Endpoints // whole events × endpoints
}

// Run performs the measurements and writes a report to out.
func Run(ctx context.Context, o Options, out io.Writer) (Report, error) {
	o.defaults()
	r := Report{Options: o}
	if o.Processes && o.Executable == "" {
		return r, errors.New("the deployed topology needs the hookline executable (Options.Executable)")
	}

	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.NaiveConcurrency+8), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	pool, postmaster := bdb.pool, bdb.postmaster

	rcv, err := newReceiver(o.ReceiverDelay)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	guard := loopbackGuard()
	key, box := newRunKey()
	payload := makePayload(o.PayloadBytes)

	fmt.Fprintf(out, "deliveries %d over %d endpoints, concurrency %d, payload %d B, receiver answers after %s\n",
		o.Deliveries, o.Endpoints, o.Concurrency, len(payload), o.ReceiverDelay)

	// 1. The ceiling: the same signed requests, no database. It is
	// measured before and after the worker, and the better of the two is
	// the ceiling: on a shared machine a neighbour's burst during one of
	// them must not flatter the ratio.
	c0 := sampleCPU(0)
	before, err := raw(ctx, guard, rcv, o, payload)
	if err != nil {
		return r, fmt.Errorf("raw: %w", err)
	}
	rawCPU := perItem(c0.self, sampleCPU(0).self, before.Count)

	// 2. hookline's worker.
	if err := seed(ctx, pool, box, rcv, o); err != nil {
		return r, err
	}
	if err := warmUp(ctx, pool, key, guard, rcv, o, payload); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	if r.Ingest, err = queue(ctx, pool, o, payload); err != nil {
		return r, fmt.Errorf("queue: %w", err)
	}
	r.Worker, r.WorkerCPU, r.DatabaseCPU, err = measured(postmaster, func(end func()) (Phase, error) {
		return runWorker(ctx, pool, key, guard, rcv, o, end)
	})
	if err != nil {
		return r, fmt.Errorf("worker: %w", err)
	}
	c2 := sampleCPU(0)
	after, err := raw(ctx, guard, rcv, o, payload)
	if err != nil {
		return r, fmt.Errorf("raw: %w", err)
	}
	r.Raw, r.RawCPU = before, rawCPU
	if after.PerSecond() > before.PerSecond() {
		r.Raw, r.RawCPU = after, perItem(c2.self, sampleCPU(0).self, after.Count)
	}
	fmt.Fprintf(out, "  raw loopback HTTP   %8.0f req/s  (best of %.0f before and %.0f after the worker)\n",
		r.Raw.PerSecond(), before.PerSecond(), after.PerSecond())
	fmt.Fprintf(out, "  hookline worker     %8.0f deliveries/s  (%.2f × raw)\n", r.Worker.PerSecond(), r.Worker.PerSecond()/r.Raw.PerSecond())
	printCPU(out, fmt.Sprintf("hookline process %.1f µs (raw: %.1f µs per request)", us(r.WorkerCPU), us(r.RawCPU)), r.DatabaseCPU)

	// 3. The bare batched worker on the same queue, re-queued.
	if err := reset(ctx, pool); err != nil {
		return r, err
	}
	if _, err := queue(ctx, pool, o, payload); err != nil {
		return r, err
	}
	urls, err := endpointURLs(ctx, pool)
	if err != nil {
		return r, err
	}
	r.Bare, r.BareCPU, r.BareDatabaseCPU, err = measured(postmaster, func(func()) (Phase, error) {
		return bare(ctx, pool, guard, rcv, o, urls) // on the bench's pool, whose sessions stay
	})
	if err != nil {
		return r, fmt.Errorf("bare: %w", err)
	}
	fmt.Fprintf(out, "  bare batched worker %8.0f deliveries/s  (%.2f × raw; hookline = %.2f × bare)\n",
		r.Bare.PerSecond(), r.Bare.PerSecond()/r.Raw.PerSecond(), r.Worker.PerSecond()/r.Bare.PerSecond())
	printCPU(out, fmt.Sprintf("bare process %.1f µs", us(r.BareCPU)), r.BareDatabaseCPU)

	// 4. The naive worker on the same queue, re-queued.
	if err := reset(ctx, pool); err != nil {
		return r, err
	}
	if _, err := queue(ctx, pool, o, payload); err != nil {
		return r, err
	}
	if r.Naive, err = naive(ctx, pool, guard, rcv, o); err != nil {
		return r, fmt.Errorf("naive: %w", err)
	}
	fmt.Fprintf(out, "  naive one-row       %8.0f deliveries/s  (hookline = %.1f × naive)\n", r.Naive.PerSecond(), r.Worker.PerSecond()/r.Naive.PerSecond())
	filtered := ""
	if o.Filter {
		filtered = "  (payload filter on every endpoint)"
	}
	fmt.Fprintf(out, "  ingest (batch API statements) %8.0f deliveries queued/s%s\n", r.Ingest.PerSecond(), filtered)

	// 5. The deployed topology, on the same database, last: its processes
	// must not run beside the in-process phases.
	if o.Processes {
		if r.Deployed, err = processes(ctx, bdb, o, r.Worker, out); err != nil {
			return r, fmt.Errorf("deployed topology: %w", err)
		}
	}
	return r, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// measured runs one worker phase and returns, with its result, the CPU
// time per delivery of this process and of the private cluster (0 when the
// cluster's processes are not known). run calls end once its work is done
// and before it stops anything: a PostgreSQL backend that exits takes its
// CPU time with it, and hookline's worker closes its own sessions when it
// stops, the one its claims run on among them (a third of the cluster's CPU
// in a drain; sampled after the stop, it was counted in some runs and not
// in others). A run that never calls it ends when it returns.
func measured(postmaster int, run func(end func()) (Phase, error)) (p Phase, self, database time.Duration, err error) {
	c1 := sampleCPU(postmaster)
	var c2 cpuSample
	ended := false
	end := func() {
		if !ended {
			c2, ended = sampleCPU(postmaster), true
		}
	}
	if p, err = run(end); err != nil {
		return p, 0, 0, err
	}
	end()
	self = perItem(c1.self, c2.self, p.Count)
	if c1.dbOK && c2.dbOK {
		database = perItem(c1.db, c2.db, p.Count)
	}
	return p, self, database, nil
}

// printCPU prints a CPU-per-delivery line, with PostgreSQL's share when known.
func printCPU(out io.Writer, process string, database time.Duration) {
	line := "  CPU per delivery    " + process
	if database > 0 {
		line += fmt.Sprintf(", PostgreSQL %.1f µs", us(database))
	}
	fmt.Fprintln(out, line)
}

func makePayload(n int) []byte {
	base := `{"type":"conversion.approved","click_id":"c-0123456789","payout":12.50,"currency":"USD","pad":"`
	pad := max(n-len(base)-2, 0)
	return []byte(base + strings.Repeat("x", pad) + `"}`)
}
