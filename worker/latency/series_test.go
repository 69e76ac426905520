package latency_test

import (
	"math"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

func TestSeries(t *testing.T) {
	end := time.Date(2026, 3, 14, 16, 0, 0, 0, time.UTC)
	minute := func(m int) time.Time { return end.Add(time.Duration(m) * time.Minute) }

	t.Run("slots are oldest first and end before end", func(t *testing.T) {
		pts := latency.Series(nil, end, 15*time.Minute, 4)
		if len(pts) != 4 {
			t.Fatalf("got %d points, want 4", len(pts))
		}
		for j, p := range pts {
			if want := end.Add(time.Duration(j-4) * 15 * time.Minute); !p.Start.Equal(want) {
				t.Errorf("point %d starts %v, want %v", j, p.Start, want)
			}
		}
	})
	t.Run("empty slots have zero count and percentiles", func(t *testing.T) {
		pts := latency.Series(map[time.Time]*latency.Histogram{minute(-1): histogramOf(time.Second)}, end, time.Minute, 3)
		for j, p := range pts[:2] {
			if p != (latency.Point{Start: p.Start}) {
				t.Errorf("point %d = %+v, want empty", j, p)
			}
		}
		if pts[2].Count != 1 || pts[2].P50 != time.Second {
			t.Errorf("last point = %+v, want the one sample", pts[2])
		}
	})
	t.Run("minutes of a slot are merged, not averaged", func(t *testing.T) {
		// Nine fast minutes and one slow one: the slot's P99 must come from
		// the slow minute's attempts, as a P99 over all of them would.
		hists := map[time.Time]*latency.Histogram{}
		var all latency.Histogram
		for m := -10; m < 0; m++ {
			d := 50 * ms
			if m == -3 {
				d = 4 * time.Second
			}
			h := new(latency.Histogram)
			for range 10 {
				h.Observe(d, true)
				all.Observe(d, true)
			}
			hists[minute(m)] = h
		}
		pts := latency.Series(hists, end, 10*time.Minute, 1)
		got := pts[0]
		want := latency.Point{Start: minute(-10), Count: 100, P50: all.Quantile(0.5), P95: all.Quantile(0.95), P99: all.Quantile(0.99)}
		if got != want {
			t.Fatalf("point = %+v, want %+v", got, want)
		}
	})
	t.Run("slot start is inclusive and end exclusive", func(t *testing.T) {
		hists := map[time.Time]*latency.Histogram{
			minute(-10): histogramOf(ms),                             // first minute of slot 0
			minute(-6):  histogramOf(ms, ms),                         // last minute of slot 0
			minute(-5):  histogramOf(ms, ms, ms, ms),                 // first minute of slot 1
			minute(-1):  histogramOf(ms, ms, ms, ms, ms, ms, ms, ms), // last minute of slot 1
		}
		pts := latency.Series(hists, end, 5*time.Minute, 2)
		if pts[0].Count != 3 || pts[1].Count != 12 {
			t.Fatalf("counts %d, %d; want 3, 12", pts[0].Count, pts[1].Count)
		}
	})
	t.Run("histograms outside the window are ignored", func(t *testing.T) {
		hists := map[time.Time]*latency.Histogram{
			minute(-11): histogramOf(ms),
			minute(0):   histogramOf(ms),
			minute(5):   histogramOf(ms),
			minute(-5):  nil,
		}
		for _, p := range latency.Series(hists, end, 5*time.Minute, 2) {
			if p.Count != 0 {
				t.Fatalf("point %+v counted a histogram outside the window", p)
			}
		}
	})
	t.Run("keys in other zones are placed by instant", func(t *testing.T) {
		tokyo := time.FixedZone("JST", 9*3600)
		hists := map[time.Time]*latency.Histogram{minute(-1).In(tokyo): histogramOf(ms)}
		if pts := latency.Series(hists, end, time.Minute, 2); pts[1].Count != 1 {
			t.Fatalf("points %+v, want the sample in the last slot", pts)
		}
	})
	t.Run("inputs are not modified", func(t *testing.T) {
		h := histogramOf(ms, 2*ms)
		want := encode(t, h)
		latency.Series(map[time.Time]*latency.Histogram{minute(-1): h, minute(-2): h}, end, 5*time.Minute, 1)
		if got := encode(t, h); string(got) != string(want) {
			t.Fatal("Series changed an input histogram")
		}
	})
	for name, args := range map[string]struct {
		step time.Duration
		n    int
	}{
		"zero slots is nil":         {time.Minute, 0},
		"negative slots is nil":     {time.Minute, -1},
		"zero step is nil":          {0, 10},
		"overflowing window is nil": {math.MaxInt64 / 2, 3},
	} {
		t.Run(name, func(t *testing.T) {
			if pts := latency.Series(nil, end, args.step, args.n); pts != nil {
				t.Fatalf("Series(step %v, n %d) = %v, want nil", args.step, args.n, pts)
			}
		})
	}
}
