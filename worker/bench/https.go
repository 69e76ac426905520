package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hookline/hookline/worker/sender"
)

// HTTPSOptions of the HTTPS bench: the drain and the steady rate over
// plain HTTP and over HTTPS, back to back in one run on one database, so
// that what TLS costs is read from figures taken minutes apart on the same
// machine state.
type HTTPSOptions struct {
	// Options sets the drains: Deliveries, Endpoints, Concurrency,
	// PayloadBytes, ReceiverDelay, DatabaseURL and Logger.
	Options
	// The steady phases: Rate events per second (default 1,000), each to
	// one endpoint in turn (as SteadyOptions.Spread), for Duration
	// (default 10 s) after Warmup, in batches of Batch from Ingesters.
	Rate             int
	Duration, Warmup time.Duration
	Batch, Ingesters int
}

// TLSDrain is one drain of the HTTPS bench.
type TLSDrain struct {
	Name string
	// Raw is the raw sender's requests to the same receiver (no
	// database), RawCPU this process's CPU time per request.
	Raw    Phase
	RawCPU time.Duration
	// Worker is hookline's worker draining the queue; WorkerCPU this
	// process's CPU time per delivery (the worker and the receiver, both
	// ends of every exchange), DatabaseCPU the private cluster's.
	Worker                 Phase
	WorkerCPU, DatabaseCPU time.Duration
	// Handshakes the receiver made during the worker's drain, and of
	// those, Resumed sessions; AllHandshakes through the warm-up, the raw
	// phase and the drain.
	Handshakes, Resumed, AllHandshakes int64
}

// HTTPSReport holds an HTTPS bench's figures.
type HTTPSReport struct {
	// HTTP, HTTPS (connections kept alive) and HTTPSClose (the receiver
	// closes the connection after every answer: a handshake per delivery).
	HTTP, HTTPS, HTTPSClose TLSDrain
	// The steady rate over HTTP and over HTTPS.
	SteadyHTTP, SteadyHTTPS SteadyReport
	// SteadyHandshakes is the HTTPS steady phase's handshakes.
	SteadyHandshakes, SteadyResumed int64
	// CPURatio is HTTPS.WorkerCPU ÷ HTTP.WorkerCPU: what a delivery over
	// a kept TLS connection costs the hookline process against a plain
	// one (the target: at most MaxTLSRatio).
	CPURatio float64
}

// MaxTLSRatio is the target: a delivery over a reused TLS connection
// costs at most this many times a plain one.
const MaxTLSRatio = 1.3

func (o *HTTPSOptions) defaults() {
	o.Options.defaults()
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
}

// HTTPS runs the HTTPS bench and writes its report to out. The receiver
// speaks TLS with a certificate from a CA made for the run, which every
// endpoint trusts through its CA bundle (endpoint_egress.ca_bundle, what
// the API's egress object sets), as a partner behind a private CA is set
// up; the worker builds each endpoint's client from it, as deployed.
func HTTPS(ctx context.Context, o HTTPSOptions, out io.Writer) (HTTPSReport, error) {
	o.defaults()
	var r HTTPSReport
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.NaiveConcurrency+8), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	ca, err := newReceiverTLS()
	if err != nil {
		return r, err
	}
	payload := makePayload(o.PayloadBytes)
	fmt.Fprintf(out, "HTTP against HTTPS: drains of %d deliveries over %d endpoints, concurrency %d, payload %d B, receiver answers after %s\n",
		o.Deliveries, o.Endpoints, o.Concurrency, len(payload), o.ReceiverDelay)
	for _, d := range []struct {
		dst       *TLSDrain
		name      string
		tls       *receiverTLS
		closeEach bool
	}{
		{&r.HTTP, "HTTP", nil, false},
		{&r.HTTPS, "HTTPS, connections kept", ca, false},
		{&r.HTTPSClose, "HTTPS, closed after each", ca, true},
	} {
		do := o.Options
		if d.closeEach {
			// A handshake a delivery costs tens of times a kept
			// connection's exchange: a quarter of the deliveries gives
			// as steady a figure in a quarter of the time.
			do.Deliveries = max(o.Endpoints, o.Deliveries/4/o.Endpoints*o.Endpoints)
		}
		if *d.dst, err = tlsDrain(ctx, bdb, do, d.tls, d.closeEach, payload); err != nil {
			return r, fmt.Errorf("%s: %w", d.name, err)
		}
		d.dst.Name = d.name
		printTLSDrain(out, *d.dst)
	}
	if r.HTTP.AllHandshakes != 0 || r.HTTPS.AllHandshakes == 0 || r.HTTPSClose.Handshakes < int64(r.HTTPSClose.Worker.Count) {
		return r, fmt.Errorf("the receiver made %d, %d and %d TLS handshakes: TLS was not used as asked", r.HTTP.AllHandshakes, r.HTTPS.AllHandshakes, r.HTTPSClose.Handshakes)
	}
	r.CPURatio = float64(r.HTTPS.WorkerCPU) / float64(r.HTTP.WorkerCPU)
	met := "met"
	if r.CPURatio > MaxTLSRatio {
		met = "NOT met"
	}
	fmt.Fprintf(out, "  CPU per delivery over HTTPS ÷ over HTTP, hookline process: kept connections %.2f (target ≤ %.1f: %s), closed after each %.2f\n",
		r.CPURatio, MaxTLSRatio, met, float64(r.HTTPSClose.WorkerCPU)/float64(r.HTTP.WorkerCPU))

	so := SteadyOptions{
		Rate: o.Rate, Duration: o.Duration, Warmup: o.Warmup, Batch: o.Batch, Ingesters: o.Ingesters,
		Endpoints: o.Endpoints, Spread: true, Concurrency: o.Concurrency, PayloadBytes: o.PayloadBytes,
		ReceiverDelay: o.ReceiverDelay, DatabaseURL: bdb.url, Logger: o.Logger,
	}
	fmt.Fprintln(out, "over HTTP:")
	if r.SteadyHTTP, err = Steady(ctx, so, out); err != nil {
		return r, fmt.Errorf("steady rate over HTTP: %w", err)
	}
	fmt.Fprintln(out, "over HTTPS:")
	so.tls = ca
	before := ca.count()
	if r.SteadyHTTPS, err = Steady(ctx, so, out); err != nil {
		return r, fmt.Errorf("steady rate over HTTPS: %w", err)
	}
	hs := ca.count().since(before)
	r.SteadyHandshakes, r.SteadyResumed = hs.all, hs.resumed
	if hs.all == 0 {
		return r, errors.New("steady rate over HTTPS: the receiver made no TLS handshake")
	}
	fmt.Fprintf(out, "  enqueue → 1st attempt at %d deliveries/s: HTTP p50 %s, p99 %s (achieved %.0f/s); HTTPS p50 %s, p99 %s (achieved %.0f/s; %d TLS handshakes, %d resumed)\n",
		o.Rate, ms(r.SteadyHTTP.EnqueueToAttempt.P50), ms(r.SteadyHTTP.EnqueueToAttempt.P99), r.SteadyHTTP.AchievedRate,
		ms(r.SteadyHTTPS.EnqueueToAttempt.P50), ms(r.SteadyHTTPS.EnqueueToAttempt.P99), r.SteadyHTTPS.AchievedRate, hs.all, hs.resumed)
	return r, nil
}

// tlsDrain seeds the endpoints for a receiver (over TLS with t, closing
// every connection with closeEach), warms up, times the raw sender and
// then hookline's worker draining o.Deliveries.
func tlsDrain(ctx context.Context, bdb benchDB, o Options, t *receiverTLS, closeEach bool, payload []byte) (TLSDrain, error) {
	var d TLSDrain
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return d, err
	}
	rcv := &receiver{}
	serveReceiver(rcv, ln, receiverHandler(rcv, o.ReceiverDelay), t, closeEach)
	defer rcv.close()
	start := t.count()
	guard := loopbackGuard()
	key, box := newRunKey()
	pool := bdb.pool
	if err := seed(ctx, pool, box, rcv, o); err != nil {
		return d, err
	}
	// One sender for the warm-up, the raw phase and the drain, as the
	// worker of a running service has: the timed phases send over the
	// connections (and TLS sessions) the warm-up opened, and count the
	// handshakes they open beyond those.
	if o.sender, err = sender.New(sender.Options{Guard: guard, UserAgent: "hookline/bench", MaxIdleConnsPerHost: o.Concurrency}); err != nil {
		return d, err
	}
	defer o.sender.Close()
	if err := warmUp(ctx, pool, key, guard, rcv, o, payload); err != nil {
		return d, fmt.Errorf("warm-up: %w", err)
	}
	if !closeEach { // the raw phase's own client opens its connections
		if _, err := raw(ctx, guard, rcv, o, payload); err != nil {
			return d, fmt.Errorf("raw: %w", err)
		}
	}
	c0 := sampleCPU(0)
	if d.Raw, err = raw(ctx, guard, rcv, o, payload); err != nil {
		return d, fmt.Errorf("raw: %w", err)
	}
	d.RawCPU = perItem(c0.self, sampleCPU(0).self, d.Raw.Count)
	if _, err := queue(ctx, pool, o, payload); err != nil {
		return d, fmt.Errorf("queue: %w", err)
	}
	before := t.count()
	d.Worker, d.WorkerCPU, d.DatabaseCPU, err = measured(bdb.postmaster, func(end func()) (Phase, error) {
		return runWorker(ctx, pool, key, guard, rcv, o, end)
	})
	if err != nil {
		return d, fmt.Errorf("worker: %w", err)
	}
	hs := t.count().since(before)
	d.Handshakes, d.Resumed, d.AllHandshakes = hs.all, hs.resumed, t.count().since(start).all
	return d, reset(ctx, pool)
}

func printTLSDrain(out io.Writer, d TLSDrain) {
	line := fmt.Sprintf("  %-26s drain %8.0f deliveries/s, CPU per delivery: hookline process %.1f µs", d.Name, d.Worker.PerSecond(), us(d.WorkerCPU))
	if d.DatabaseCPU > 0 {
		line += fmt.Sprintf(", PostgreSQL %.1f µs", us(d.DatabaseCPU))
	}
	line += fmt.Sprintf("; raw %.0f requests/s, %.1f µs each", d.Raw.PerSecond(), us(d.RawCPU))
	if d.AllHandshakes > 0 {
		line += fmt.Sprintf("; TLS handshakes %d in the drain (%d resumed), %d with the warm-up", d.Handshakes, d.Resumed, d.AllHandshakes)
	}
	fmt.Fprintln(out, line)
}
