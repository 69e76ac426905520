package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/latency"
)

// profile invents an endpoint's past traffic. age is how long before the
// end of the history a minute started (0 is the most recent minute).
type profile struct {
	// load scales the endpoint's normal traffic (nil: 1), for example down
	// to a trickle while its breaker was open.
	load func(age time.Duration) float64
	// probing: the breaker was open at this age, so a probe reached the
	// endpoint every probeEvery whatever the traffic (nil: never).
	probing func(age time.Duration) bool
	// attempt draws one attempt's duration and success.
	attempt func(age time.Duration, rnd *rand.Rand) (time.Duration, bool)
}

// probeEvery is how often a probe reaches an endpoint whose breaker is open
// in the invented history (the breaker's base cooldown).
const probeEvery = 5 * time.Minute

var (
	ordersHistory = profile{attempt: steady(28*time.Millisecond, 0.35, 0.001)}

	trackerHistory = profile{attempt: steady(35*time.Millisecond, 0.3, 0.015)} // failures are duplicates

	// invoicesHistory is steady around 150 ms until two hours ago, then
	// climbs to about 450 ms with a widening tail: the slowdown the live
	// receiver continues.
	invoicesHistory = profile{attempt: func(age time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		const climb = 2 * time.Hour
		frac := 0.0
		if age < climb {
			frac = 1 - float64(age)/float64(climb)
		}
		median := time.Duration(float64(150*time.Millisecond) * math.Pow(3, frac))
		return logNormal(rnd, median, 0.25+0.25*frac), true
	}}

	// legacyHistory fails now and then all day, had an outage three hours
	// ago, and has been down for the last 45 minutes, after which only a
	// trickle of breaker probes reached it.
	legacyHistory = openedAgo(42*time.Minute, func(age time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		failP := 0.12
		if age < 45*time.Minute || (age >= 3*time.Hour && age < 3*time.Hour+35*time.Minute) {
			failP = 1
		}
		if rnd.Float64() < failP {
			return uniform(rnd, 20*time.Millisecond, 80*time.Millisecond), false
		}
		return logNormal(rnd, 380*time.Millisecond, 0.5), true
	})

	// authHistory was healthy until its token was revoked 20 minutes ago.
	authHistory = openedAgo(17*time.Minute, func(age time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		if age < 20*time.Minute {
			return uniform(rnd, 8*time.Millisecond, 30*time.Millisecond), false
		}
		return steady(90*time.Millisecond, 0.3, 0.002)(age, rnd)
	})

	// burstyHistory hits its quota for a few minutes every hour.
	burstyHistory = profile{attempt: func(age time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		failP := 0.005
		if m := int(age/time.Minute) % 60; m >= 17 && m < 20 {
			failP = 0.35
		}
		if rnd.Float64() < failP {
			return uniform(rnd, 5*time.Millisecond, 15*time.Millisecond), false
		}
		return logNormal(rnd, 45*time.Millisecond, 0.3), true
	}}

	// flakyHistory: 3 % 503s, 2 % timeouts at the endpoint's 2 s timeout.
	flakyHistory = profile{attempt: func(_ time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		switch x := rnd.Float64(); {
		case x < 0.03:
			return logNormal(rnd, 60*time.Millisecond, 0.3), false
		case x < 0.05:
			return flakyTimeoutMs*time.Millisecond + uniform(rnd, 0, 5*time.Millisecond), false
		}
		return logNormal(rnd, 70*time.Millisecond, 0.4), true
	}}
)

// openedAgo is a history whose breaker opened open before its end: since
// then a trickle of its traffic (1 %) and the breaker's probes reached it.
func openedAgo(open time.Duration, attempt func(time.Duration, *rand.Rand) (time.Duration, bool)) profile {
	return profile{
		load: func(age time.Duration) float64 {
			if age < open {
				return 0.01
			}
			return 1
		},
		probing: func(age time.Duration) bool { return age < open },
		attempt: attempt,
	}
}

// steady draws log-normal latencies around median and fails a fraction
// failP of attempts, quickly.
func steady(median time.Duration, sigma, failP float64) func(time.Duration, *rand.Rand) (time.Duration, bool) {
	return func(_ time.Duration, rnd *rand.Rand) (time.Duration, bool) {
		if rnd.Float64() < failP {
			return uniform(rnd, 5*time.Millisecond, 40*time.Millisecond), false
		}
		return logNormal(rnd, median, sigma), true
	}
}

// diurnal is the traffic of a time of day (UTC) relative to the daily
// peak at 15:00: a fifth of it at 03:00.
func diurnal(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	return 0.6 + 0.4*math.Sin(2*math.Pi*(h-9)/24)
}

// Histogram resolutions of latency_histograms (see worker/telemetry.go).
var resolutions = []time.Duration{time.Minute, 15 * time.Minute, time.Hour}

// BackfillLatency writes 24 hours of plausible latency history for the
// demo endpoints (the ids Seed returned, by receiver name; other names are
// ignored): minute, 15-minute and hourly rows of latency_histograms, built
// from worker/latency histograms whose counts, sum and P50/P95/P99 columns
// match their buckets. Traffic follows a daily curve at the stream's Rate.
// The fast endpoints are steady, the slowing one has climbed over the last
// two hours, LegacyCRM fails often and has been down for the last 45
// minutes, PartnerAuth for the last 20.
//
// Only slots that ended before the current minute, and before their
// endpoint was created, are written; an endpoint gets history once; and
// existing rows are never changed. So running it again, or against
// endpoints with real traffic, adds nothing false. The worker's next health refresh turns the rows into
// sparklines and percentiles: run this before the worker starts, or call
// its RefreshNow, for the dashboard to show them at once.
//
// This is demo-only data written straight into the database, outside the
// worker that owns the table, which is why it is plain SQL via Pool.
func BackfillLatency(ctx context.Context, o Options, endpoints map[string]int64) error {
	o = o.withDefaults()
	if o.Pool == nil {
		return errors.New("demo: Pool is required to backfill latency history")
	}
	specs := map[string]endpointSpec{}
	for _, e := range demoEndpoints() {
		specs[e.key] = e
	}
	keys := make([]string, 0, len(endpoints))
	for k := range endpoints {
		if _, ok := specs[k]; ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(endpoints[a], endpoints[b]) })

	end := o.Now().UTC().Truncate(time.Minute) // the current minute is live
	inserted := int64(0)
	for _, k := range keys {
		id := endpoints[k]
		rows, err := history(id, specs[k], o.Rate, end, rand.New(rand.NewPCG(o.Seed, uint64(id))))
		if err != nil {
			return fmt.Errorf("demo: latency history of %s: %w", k, err)
		}
		n, err := db.New(o.Pool).LatencyBackfill(ctx, db.LatencyBackfillParams(rows))
		if err != nil {
			return fmt.Errorf("demo: write latency history of %s: %w", k, err)
		}
		inserted += n
	}
	o.Logger.Info("demo latency history written", "endpoints", len(keys), "rows", inserted)
	return nil
}

// history invents one endpoint's minutes from a whole hour a day before end
// up to end, and the 15-minute and hourly slots they complete.
func history(id int64, e endpointSpec, rate float64, end time.Time, rnd *rand.Rand) (latency.Rows, error) {
	var rows latency.Rows
	perMinute := rate * 60 * shareOf(e)
	begin := end.Add(-24 * time.Hour).Truncate(time.Hour)
	// Coarser slots, in order, each the merge of its minutes.
	coarse := map[time.Duration]map[time.Time]*latency.Histogram{}
	for _, res := range resolutions[1:] {
		coarse[res] = map[time.Time]*latency.Histogram{}
	}
	for m := begin; m.Before(end); m = m.Add(time.Minute) {
		age := end.Sub(m)
		load := 1.0
		if e.history.load != nil {
			load = e.history.load(age)
		}
		mean := perMinute * diurnal(m) * load
		n := int(math.Round(mean * (1 + 0.15*rnd.NormFloat64())))
		// A trickle of traffic rounds to nothing at night; the probes
		// come anyway.
		if e.history.probing != nil && e.history.probing(age) && m.Minute()%int(probeEvery/time.Minute) == 0 {
			n = max(n, 1)
		}
		if n <= 0 {
			continue
		}
		h := &latency.Histogram{}
		for range n {
			d, ok := e.history.attempt(age, rnd)
			h.Observe(d, ok)
		}
		if err := rows.Add(id, int32(time.Minute/time.Second), m, h); err != nil {
			return rows, err
		}
		for res, slots := range coarse {
			start := m.Truncate(res)
			if slots[start] == nil {
				slots[start] = &latency.Histogram{}
			}
			slots[start].Merge(h)
		}
	}
	for _, res := range resolutions[1:] {
		starts := make([]time.Time, 0, len(coarse[res]))
		for s := range coarse[res] {
			// A slot still open at end would hold only part of its minutes.
			if !s.Add(res).After(end) {
				starts = append(starts, s)
			}
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		for _, s := range starts {
			if err := rows.Add(id, int32(res/time.Second), s, coarse[res][s]); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

func shareOf(e endpointSpec) float64 {
	var s float64
	for _, t := range e.eventTypes {
		switch t {
		case typeOrder:
			s += shareOrder
		case typeInvoice:
			s += shareInvoice
		case typeConversion:
			s += shareConversion
		}
	}
	return s
}

// logNormal draws around median with the given spread (sigma of the log).
func logNormal(rnd *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*rnd.NormFloat64()))
}

func uniform(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
}
