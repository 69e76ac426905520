package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookline/hookline/web/app"
)

// mixFlags are the flags of -profile mix and -outage beside the shared
// ones (-endpoints, -rate, -duration, -warmup, -batch, -ingesters,
// -concurrency, -database-url), whose defaults differ in these modes: the
// issue's sizes, 1,000 endpoints at 2,000 events/s.
type mixFlags struct {
	profile            *string
	outage             *int
	outageFor, timeout *time.Duration
	every              *time.Duration
	hanging, failing   *int
	maxInFlight        *int
}

func registerMixFlags(fs *flag.FlagSet) mixFlags {
	return mixFlags{
		profile:     fs.String("profile", "", "instead of the drain: mix runs -rate events/s (default 2000), each to one of -endpoints (default 1000) that answer as partners do (log-normal around a median of 10–500 ms each, -hanging until the timeout, -failing with 503s in bursts, one down, one answering 429 with Retry-After) for -duration (default 10m); reports enqueue → 1st attempt per class, RSS and goroutines every -every, and the most in flight per endpoint"),
		outage:      fs.Int("outage", 0, "instead of the drain: this many endpoints (e.g. 100) refuse connections for -outage-for while -rate events/s (default 2000) keep arriving over -endpoints (default 1000), then come back; reports the drain each -every, fairness across them and the fresh events' latency, beside a clean drain of a backlog as large measured first in the same run"),
		outageFor:   fs.Duration("outage-for", 10*time.Minute, "with -outage: how long the endpoints are down"),
		every:       fs.Duration("every", time.Minute, "with -profile mix or -outage: the reporting interval"),
		timeout:     fs.Duration("timeout", 10*time.Second, "with -profile mix or -outage: each endpoint's timeout"),
		hanging:     fs.Int("hanging", 0, "with -profile mix: endpoints that hang until the timeout (0: 1 % of -endpoints, -1: none)"),
		failing:     fs.Int("failing", 0, "with -profile mix: endpoints that fail with 503s in bursts (0: 1 % of -endpoints, -1: none)"),
		maxInFlight: fs.Int("max-in-flight", 8, "with -profile mix or -outage: each endpoint's cap of sends in flight"),
	}
}

// command returns the run of -profile mix or -outage, or nil when neither
// was asked for.
func (m mixFlags) command(fs *flag.FlagSet, o Options, rate int, duration, warmup time.Duration, batch, ingesters int, std app.Stdio) (app.Run, error) {
	if *m.profile == "" && *m.outage == 0 {
		return nil, nil
	}
	if *m.profile != "" && *m.profile != "mix" {
		return nil, fmt.Errorf("--profile %q: the one profile is mix", *m.profile)
	}
	if *m.profile != "" && *m.outage != 0 {
		return nil, errors.New("--profile mix and --outage are runs of their own; give one")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, other := range []string{"processes", "eventlog", "sink", "https", "soak", "timeline", "retain-delivered", "spread", "deliveries", "receiver-delay", "cpuprofile", "scale"} {
		if set[other] {
			return nil, fmt.Errorf("--%s does not go with --profile mix or --outage", other)
		}
	}
	if !set["endpoints"] {
		o.Endpoints = 1000
	}
	if !set["rate"] {
		rate = 2000
	}
	if !set["duration"] {
		duration = 10 * time.Minute
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rate", rate}, {"endpoints", o.Endpoints}, {"batch", batch}, {"ingesters", ingesters}, {"concurrency", o.Concurrency}, {"max-in-flight", *m.maxInFlight}} {
		if f.v < 1 {
			return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"duration", duration}, {"every", *m.every}, {"timeout", *m.timeout}, {"outage-for", *m.outageFor}} {
		if f.v <= 0 {
			return nil, fmt.Errorf("--%s %s: want a positive duration", f.name, f.v)
		}
	}
	if warmup < 0 {
		return nil, fmt.Errorf("--warmup %s: want a positive duration, or 0 for the default", warmup)
	}
	s := mixSettings{MaxInFlight: *m.maxInFlight, Timeout: *m.timeout}
	if *m.outage != 0 {
		if *m.outage < 1 || *m.outage >= o.Endpoints {
			return nil, fmt.Errorf("--outage %d: want at least 1 and fewer than --endpoints %d", *m.outage, o.Endpoints)
		}
		return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
			_, err := Outage(ctx, OutageOptions{
				Endpoints: o.Endpoints, Down: *m.outage, For: *m.outageFor, Rate: rate, Every: *m.every,
				Batch: batch, Ingesters: ingesters, Concurrency: o.Concurrency, mixSettings: s,
				DatabaseURL: o.DatabaseURL, Logger: log,
			}, std.Out)
			return err
		}, nil
	}
	if *m.hanging < -1 || *m.failing < -1 {
		return nil, errors.New("--hanging and --failing: want a count, 0 for 1 % of --endpoints or -1 for none")
	}
	return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
		_, err := Mix(ctx, MixOptions{
			Endpoints: o.Endpoints, Rate: rate, Duration: duration, Warmup: warmup, Hanging: *m.hanging, Failing: *m.failing,
			Every: *m.every, Batch: batch, Ingesters: ingesters, Concurrency: o.Concurrency, mixSettings: s,
			DatabaseURL: o.DatabaseURL, Logger: log,
		}, std.Out)
		return err
	}, nil
}
