package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/web/app"
)

// scaleFlags are the flags of -scale beside the shared ones (-endpoints for
// the reference, -deliveries, -rate, -duration, -warmup, -concurrency,
// -database-url).
type scaleFlags struct {
	scale     *bool
	endpoints *string
	retained  *string
}

func registerScaleFlags(fs *flag.FlagSet) scaleFlags {
	return scaleFlags{
		scale:     fs.Bool("scale", false, "instead of the drain: cost as work grows; for a reference of -endpoints (default 100) and then each of -scale-endpoints and -scale-retained, a drain of -deliveries (CPU per delivery of this process and of PostgreSQL) and -rate events/s (default 1000) for -duration (enqueue → 1st attempt), each event to one endpoint; a table of each case's ratio to the reference"),
		endpoints: fs.String("scale-endpoints", "10000,100000", "with -scale: the endpoint counts to measure, comma-separated"),
		retained:  fs.String("scale-retained", "1000000,10000000", "with -scale: the delivered deliveries retained (with their events and attempts) to measure at the reference's endpoints, comma-separated"),
	}
}

// command returns the run of -scale, or nil when it was not asked for.
func (s scaleFlags) command(fs *flag.FlagSet, o Options, rate int, duration, warmup time.Duration, std app.Stdio) (app.Run, error) {
	if !*s.scale {
		return nil, nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, other := range []string{"processes", "eventlog", "sink", "https", "soak", "timeline", "retain-delivered", "spread", "profile", "outage", "receiver-delay", "cpuprofile", "filter"} {
		if set[other] {
			return nil, fmt.Errorf("--%s does not go with --scale", other)
		}
	}
	if !set["rate"] {
		rate = 1000
	}
	endpoints, err := parseCounts("scale-endpoints", *s.endpoints)
	if err != nil {
		return nil, err
	}
	retained, err := parseCounts("scale-retained", *s.retained)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rate", rate}, {"endpoints", o.Endpoints}, {"deliveries", o.Deliveries}, {"concurrency", o.Concurrency}} {
		if f.v < 1 {
			return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
		}
	}
	if duration <= 0 || warmup < 0 {
		return nil, fmt.Errorf("--duration %s, --warmup %s: want a positive duration (--warmup 0: the default)", duration, warmup)
	}
	so := ScaleOptions{
		Reference: o.Endpoints, Endpoints: make([]int, len(endpoints)), Retained: retained, Deliveries: o.Deliveries,
		Rate: rate, Duration: duration, Warmup: warmup, Concurrency: o.Concurrency, DatabaseURL: o.DatabaseURL,
	}
	for i, n := range endpoints {
		so.Endpoints[i] = int(n)
	}
	return func(ctx context.Context, _ app.Config, log *slog.Logger) error {
		so.Logger = log
		_, err := Scale(ctx, so, std.Out)
		return err
	}, nil
}

// parseCounts reads a comma-separated list of counts ("" is none).
func parseCounts(flagName, s string) ([]int64, error) {
	out := []int64{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(f, "_", ""), 10, 64)
		if err != nil || n < 1 || n > 1_000_000_000 {
			return nil, fmt.Errorf("--%s %q: want positive counts, comma-separated", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}
