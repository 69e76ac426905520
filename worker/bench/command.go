package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hookline/hookline/web/app"
)

// Flags is the bench command: it measures throughput on a private cluster (fsync on)
// against a loopback receiver: hookline's worker, the raw HTTP ceiling and
// a naive one-row worker, in one run; -processes adds the deployed
// topology (web, worker and receiver as processes of this executable), and
// -sink is that receiver's process.
func Flags(fs *flag.FlagSet, std app.Stdio) func() (app.Run, error) {
	var o Options
	fs.IntVar(&o.Deliveries, "deliveries", 20000, "deliveries to drain")
	fs.IntVar(&o.Endpoints, "endpoints", 100, "endpoints they spread over")
	fs.IntVar(&o.Concurrency, "concurrency", 256, "sends in flight")
	fs.IntVar(&o.PayloadBytes, "payload-bytes", 512, "event payload size")
	fs.IntVar(&o.NaiveConcurrency, "naive-concurrency", 64, "connections of the naive one-row worker")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "use this database (its hookline tables are truncated) instead of a private cluster")
	fs.DurationVar(&o.ReceiverDelay, "receiver-delay", 0, "how long the loopback receiver takes to answer (e.g. 20ms, a typical partner)")
	fs.BoolVar(&o.Filter, "filter", false, "put a payload filter (that every event passes) on every endpoint, to measure its ingest cost")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the worker phase to this file")
	fs.BoolVar(&o.Processes, "processes", false, "after the in-process figures, also drain in the deployed topology: hookline web, hookline worker and the receiver each in their own process, the events queued through the API")
	sink := fs.String("sink", "", "instead of the drain: serve the bench's receiver on this loopback address (127.0.0.1:0 picks a port) until stopped, printing its URL and then the requests it received (-processes runs it)")
	var el EventLogOptions
	eventLog := fs.Bool("eventlog", false, "instead of the drain: populate a database with -events events (about 2 deliveries and 3 attempts each) and time the event log's searches, pages and event pages")
	fs.Int64Var(&el.Events, "events", 10_000_000, "with -eventlog: events to populate")
	fs.StringVar(&el.DataDir, "data-dir", "", "with -eventlog: keep the populated PostgreSQL cluster here and reuse it on the next run")
	fs.IntVar(&el.Requests, "requests", 100, "with -eventlog: timed requests per case")
	fs.BoolVar(&el.Retention, "retention", false, "with -eventlog: afterwards run the worker's retention passes (7 days) until nothing is left to delete, and time them")
	rate := fs.Int("rate", 0, "instead of the drain: queue this many events per second for -duration while the worker delivers them, and report their latencies")
	duration := fs.Duration("duration", 20*time.Second, "with -rate: how long to post, after the warm-up")
	warmup := fs.Duration("warmup", 0, "with -rate: post at the rate for this long first, left out of every figure (default a fifth of -duration, at most 2s)")
	batch := fs.Int("batch", 10, "with -rate: events per ingest transaction")
	ingesters := fs.Int("ingesters", 8, "with -rate: ingest transactions in flight at once, as concurrent API requests")
	spread := fs.Bool("spread", false, "with -rate: each event goes to one endpoint, in turn, instead of to every endpoint")
	soak := fs.Duration("soak", 0, "with -rate: a soak; report throughput, latency, table sizes and RSS for every interval this long (e.g. 1m)")
	timelineFile := fs.String("timeline", "", "with -rate: write each second's latency (event created to the receiver, p50, p99, max) to this CSV file")
	retain := fs.Duration("retain-delivered", 0, "with -soak: keep delivered deliveries and their events this long (at least three intervals) instead of 7 days, so retention deletes within the soak")
	httpsMode := fs.Bool("https", false, "instead of the drain: drain over HTTP, over HTTPS (a CA made for the run, trusted through each endpoint's CA bundle) and over HTTPS to a receiver that closes the connection after every answer, then -rate events/s (default 1000, each to one endpoint) over HTTP and over HTTPS for -duration: CPU per delivery, TLS handshakes and enqueue → 1st attempt latency, back to back")
	liveReads := fs.Bool("live-reads", true, "with -retain-delivered: read each second's enqueue → 1st attempt latencies during the run, before retention takes their rows; false reads them only at the end (the intervals retention took then report none) and spares PostgreSQL that work during the soak")
	mix := registerMixFlags(fs)
	scale := registerScaleFlags(fs)
	return func() (app.Run, error) {
		if run, err := mix.command(fs, o, *rate, *duration, *warmup, *batch, *ingesters, std); run != nil || err != nil {
			return run, err
		}
		if run, err := scale.command(fs, o, *rate, *duration, *warmup, std); run != nil || err != nil {
			return run, err
		}
		if *sink != "" {
			if err := LoopbackAddr(*sink); err != nil {
				return nil, fmt.Errorf("--sink %w", err)
			}
			if o.ReceiverDelay < 0 {
				return nil, errors.New("--receiver-delay cannot be negative")
			}
			return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
				return Sink(ctx, *sink, o.ReceiverDelay, std.Out)
			}, nil
		}
		if *httpsMode {
			return httpsCommand(o, *rate, *duration, *warmup, *batch, *ingesters, std)(
				o.Processes || *eventLog || *soak != 0 || *timelineFile != "" || *retain != 0 || *profile != "")
		}
		if *timelineFile != "" && *rate == 0 {
			return nil, errors.New("--timeline goes with --rate")
		}
		if *warmup != 0 && *rate == 0 {
			return nil, errors.New("--warmup goes with --rate")
		}
		if o.Processes && (*rate != 0 || *eventLog) {
			return nil, errors.New("--processes adds a row to the drain; it does not go with --rate or --eventlog")
		}
		if *rate != 0 {
			for _, f := range []struct {
				name string
				v    int
			}{{"rate", *rate}, {"batch", *batch}, {"ingesters", *ingesters}, {"endpoints", o.Endpoints}, {"concurrency", o.Concurrency}} {
				if f.v < 1 {
					return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
				}
			}
			if *duration <= 0 {
				return nil, fmt.Errorf("--duration %s: want a positive duration", *duration)
			}
			if *warmup < 0 {
				return nil, fmt.Errorf("--warmup %s: want a positive duration, or 0 for the default", *warmup)
			}
			if *soak < 0 || *soak > *duration {
				return nil, fmt.Errorf("--soak %s: want an interval within --duration", *soak)
			}
			if *retain != 0 && (*soak == 0 || *retain < 3**soak) {
				return nil, fmt.Errorf("--retain-delivered %s: want --soak and at least three of its intervals", *retain)
			}
			if !*liveReads && *retain == 0 {
				return nil, errors.New("--live-reads=false goes with --retain-delivered")
			}
			if o.PayloadBytes < 0 || o.ReceiverDelay < 0 {
				return nil, errors.New("--payload-bytes and --receiver-delay cannot be negative")
			}
			return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
				so := SteadyOptions{
					Rate: *rate, Duration: *duration, Warmup: *warmup, Batch: *batch, Ingesters: *ingesters, Endpoints: o.Endpoints, Spread: *spread, Soak: *soak, RetainDelivered: *retain, NoLiveReads: !*liveReads, Concurrency: o.Concurrency,
					PayloadBytes: o.PayloadBytes, ReceiverDelay: o.ReceiverDelay, DatabaseURL: o.DatabaseURL, Logger: log,
				}
				if *timelineFile == "" {
					_, err := Steady(ctx, so, std.Out)
					return err
				}
				f, err := os.Create(*timelineFile)
				if err != nil {
					return fmt.Errorf("--timeline: %w", err)
				}
				so.Timeline = f
				_, err = Steady(ctx, so, std.Out)
				return errors.Join(err, f.Close())
			}, nil
		}
		if *eventLog {
			if el.Events < 1000 {
				return nil, fmt.Errorf("--events %d: want at least 1000", el.Events)
			}
			return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
				el.Logger, el.DatabaseURL = log, o.DatabaseURL
				el.Handler, el.SignIn = eventLogServer(log), eventLogUsers
				return EventLog(ctx, el, std.Out)
			}, nil
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"deliveries", o.Deliveries}, {"endpoints", o.Endpoints}, {"concurrency", o.Concurrency}, {"naive-concurrency", o.NaiveConcurrency}} {
			if f.v < 1 {
				return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
			}
		}
		if o.PayloadBytes < 0 || o.ReceiverDelay < 0 {
			return nil, errors.New("--payload-bytes and --receiver-delay cannot be negative")
		}
		return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
			o.Logger = log
			if o.Processes {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--processes runs this executable: %w", err)
				}
				o.Executable = exe
			}
			if *profile != "" {
				f, err := os.Create(*profile)
				if err != nil {
					return err
				}
				defer f.Close()
				o.CPUProfile = f
			}
			_, err := Run(ctx, o, std.Out)
			return err
		}, nil
	}
}

// httpsCommand checks the flags of bench -https (others is whether a flag
// of another mode was given) and returns its run.
func httpsCommand(o Options, rate int, duration, warmup time.Duration, batch, ingesters int, std app.Stdio) func(others bool) (app.Run, error) {
	return func(others bool) (app.Run, error) {
		if others {
			return nil, errors.New("--https runs its own drains and steady rates; it does not go with --processes, --eventlog, --soak, --timeline, --retain-delivered or --cpuprofile")
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"deliveries", o.Deliveries}, {"endpoints", o.Endpoints}, {"concurrency", o.Concurrency}, {"batch", batch}, {"ingesters", ingesters}} {
			if f.v < 1 {
				return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
			}
		}
		if rate < 0 {
			return nil, fmt.Errorf("--rate %d: want at least 1, or 0 for 1000 with --https", rate)
		}
		if duration <= 0 || warmup < 0 {
			return nil, fmt.Errorf("--duration %s, --warmup %s: want a positive duration (--warmup 0: the default)", duration, warmup)
		}
		if o.PayloadBytes < 0 || o.ReceiverDelay < 0 {
			return nil, errors.New("--payload-bytes and --receiver-delay cannot be negative")
		}
		return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
			o.Logger = log
			_, err := HTTPS(ctx, HTTPSOptions{Options: o, Rate: rate, Duration: duration, Warmup: warmup, Batch: batch, Ingesters: ingesters}, std.Out)
			return err
		}, nil
	}
}
