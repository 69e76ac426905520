package latency_test

import (
	"math"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

const ms = time.Millisecond

func TestHistogramCounters(t *testing.T) {
	tests := []struct {
		name                string
		observe             func(h *latency.Histogram)
		count, ok, fail     int64
		sum, mean, min, max time.Duration
	}{
		{
			name:    "zero value is empty",
			observe: func(*latency.Histogram) {},
		},
		{
			name: "ok and failed attempts are counted apart",
			observe: func(h *latency.Histogram) {
				h.Observe(100*ms, true)
				h.Observe(300*ms, false)
				h.Observe(200*ms, true)
			},
			count: 3, ok: 2, fail: 1,
			sum: 600 * ms, mean: 200 * ms, min: 100 * ms, max: 300 * ms,
		},
		{
			name: "negative duration counts as zero",
			observe: func(h *latency.Histogram) {
				h.Observe(-5*ms, true)
				h.Observe(10*ms, true)
			},
			count: 2, ok: 2,
			sum: 10 * ms, mean: 5 * ms, min: 0, max: 10 * ms,
		},
		{
			name: "sum saturates instead of wrapping",
			observe: func(h *latency.Histogram) {
				h.Observe(math.MaxInt64-1, true)
				h.Observe(time.Hour, true)
			},
			count: 2, ok: 2,
			sum: math.MaxInt64, mean: math.MaxInt64 / 2, min: time.Hour, max: math.MaxInt64 - 1,
		},
		{
			name: "mean of a saturated sum stays within the extremes",
			observe: func(h *latency.Histogram) {
				h.Observe(math.MaxInt64, true)
				h.Observe(math.MaxInt64, true)
			},
			count: 2, ok: 2,
			sum: math.MaxInt64, mean: math.MaxInt64, min: math.MaxInt64, max: math.MaxInt64,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h latency.Histogram
			tt.observe(&h)
			got := []any{h.Count(), h.OK(), h.Fail(), h.Sum(), h.Mean(), h.Min(), h.Max()}
			want := []any{tt.count, tt.ok, tt.fail, tt.sum, tt.mean, tt.min, tt.max}
			names := []string{"Count", "OK", "Fail", "Sum", "Mean", "Min", "Max"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s() = %v, want %v", names[i], got[i], want[i])
				}
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	type check struct {
		q    float64
		want time.Duration
	}
	tests := []struct {
		name    string
		samples []time.Duration
		checks  []check
	}{
		{
			name:   "empty histogram returns 0",
			checks: []check{{0, 0}, {0.5, 0}, {1, 0}},
		},
		{
			name:    "single sample is exact at every q",
			samples: []time.Duration{1234567 * time.Nanosecond},
			checks:  []check{{0, 1234567}, {0.5, 1234567}, {0.99, 1234567}, {1, 1234567}},
		},
		{
			name:    "two samples interpolate exactly like percentile_cont",
			samples: []time.Duration{100 * ms, 1100 * ms},
			checks:  []check{{0, 100 * ms}, {0.5, 600 * ms}, {0.95, 1050 * ms}, {1, 1100 * ms}},
		},
		{
			name:    "P0 and P100 are the exact extremes",
			samples: []time.Duration{101 * ms, 250 * ms, 333 * ms, 999 * ms},
			checks:  []check{{0, 101 * ms}, {1, 999 * ms}},
		},
		{
			name:    "constant latency is exact",
			samples: []time.Duration{250 * ms, 250 * ms, 250 * ms, 250 * ms, 250 * ms},
			checks:  []check{{0.5, 250 * ms}, {0.95, 250 * ms}, {0.99, 250 * ms}},
		},
		{
			name:    "q below 0 is P0",
			samples: []time.Duration{10 * ms, 20 * ms, 30 * ms},
			checks:  []check{{-1, 10 * ms}},
		},
		{
			name:    "q above 1 is P100",
			samples: []time.Duration{10 * ms, 20 * ms, 30 * ms},
			checks:  []check{{2, 30 * ms}},
		},
		{
			name:    "NaN is P0",
			samples: []time.Duration{10 * ms, 20 * ms, 30 * ms},
			checks:  []check{{math.NaN(), 10 * ms}},
		},
		{
			name:    "faster than Min keeps the exact extremes",
			samples: []time.Duration{2 * time.Microsecond, 40 * time.Microsecond},
			checks:  []check{{0, 2 * time.Microsecond}, {1, 40 * time.Microsecond}, {0.5, 21 * time.Microsecond}},
		},
		{
			name:    "slower than Max keeps the exact extremes",
			samples: []time.Duration{20 * time.Minute, time.Hour},
			checks:  []check{{0, 20 * time.Minute}, {1, time.Hour}, {0.5, 40 * time.Minute}},
		},
		{
			name:    "interior estimates stay inside [min, max]",
			samples: []time.Duration{100*ms + 1, 100*ms + 2, 100*ms + 3},
			checks:  []check{{0.5, 100*ms + 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := histogramOf(tt.samples...)
			for _, c := range tt.checks {
				if got := h.Quantile(c.q); got != c.want {
					t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
				}
			}
		})
	}
}

func TestHistogramQuantileIsMonotonic(t *testing.T) {
	r := newRand(7)
	var h latency.Histogram
	for range 5000 {
		h.Observe(logNormal(r, 200*ms, 1.5), true)
	}
	prev := time.Duration(0)
	for i := 0; i <= 10_000; i++ {
		q := float64(i) / 10_000
		got := h.Quantile(q)
		if got < prev {
			t.Fatalf("Quantile(%v) = %v < Quantile of a smaller q = %v", q, got, prev)
		}
		prev = got
	}
}

func TestHistogramMerge(t *testing.T) {
	r := newRand(3)
	sample := func(n int, median time.Duration) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = logNormal(r, median, 1)
		}
		return ds
	}
	a, b, c := sample(500, 50*ms), sample(700, 2*time.Second), sample(300, 30*time.Microsecond)

	t.Run("merge is associative and equals observing everything into one", func(t *testing.T) {
		left := histogramOf(a...)
		ab := histogramOf(b...)
		left.Merge(ab)
		left.Merge(histogramOf(c...))

		bc := histogramOf(b...)
		bc.Merge(histogramOf(c...))
		right := histogramOf(a...)
		right.Merge(bc)

		var all latency.Histogram
		for _, ds := range [][]time.Duration{a, b, c} {
			for i, d := range ds {
				all.Observe(d, i%2 == 0)
			}
		}
		assertEqualHistograms(t, left, right)
		assertEqualHistograms(t, left, &all)
	})
	t.Run("merge is commutative", func(t *testing.T) {
		ab := histogramOf(a...)
		ab.Merge(histogramOf(b...))
		ba := histogramOf(b...)
		ba.Merge(histogramOf(a...))
		assertEqualHistograms(t, ab, ba)
	})
	t.Run("merging into the zero value copies", func(t *testing.T) {
		src := histogramOf(a...)
		var dst latency.Histogram
		dst.Merge(src)
		assertEqualHistograms(t, &dst, src)
	})
	t.Run("merged histogram does not share buckets with its source", func(t *testing.T) {
		src := histogramOf(a...)
		var dst latency.Histogram
		dst.Merge(src)
		want := encode(t, &dst)
		src.Observe(a[0], true)
		if got := encode(t, &dst); string(got) != string(want) {
			t.Fatal("observing into the source changed the merged histogram")
		}
	})
	t.Run("nil and empty are no-ops", func(t *testing.T) {
		h := histogramOf(a...)
		want := encode(t, h)
		h.Merge(nil)
		h.Merge(&latency.Histogram{})
		if got := encode(t, h); string(got) != string(want) {
			t.Fatal("merging nil or empty changed the histogram")
		}
	})
	t.Run("merging into itself doubles every count", func(t *testing.T) {
		h := histogramOf(a...)
		h.Merge(h)
		want := histogramOf(a...)
		want.Merge(histogramOf(a...))
		assertEqualHistograms(t, h, want)
	})
	t.Run("far-apart windows merge", func(t *testing.T) {
		h := histogramOf(latency.Min)
		h.Merge(histogramOf(time.Hour))
		var want latency.Histogram
		want.Observe(latency.Min, true)
		want.Observe(time.Hour, true)
		assertEqualHistograms(t, h, &want)
	})
}

func TestHistogramReset(t *testing.T) {
	h := histogramOf(10*ms, 20*ms, 30*ms)
	h.Reset()
	t.Run("reset histogram equals the zero value", func(t *testing.T) {
		assertEqualHistograms(t, h, &latency.Histogram{})
		if h.Count() != 0 || h.Sum() != 0 || h.Quantile(0.5) != 0 {
			t.Fatalf("after Reset: count %d, sum %v, P50 %v", h.Count(), h.Sum(), h.Quantile(0.5))
		}
	})
	t.Run("reset histogram observes like a new one", func(t *testing.T) {
		h.Observe(500*ms, false)
		var want latency.Histogram
		want.Observe(500*ms, false)
		assertEqualHistograms(t, h, &want)
	})
}

// TestRowsAdd: a histogram becomes one row of its stored columns.
func TestRowsAdd(t *testing.T) {
	var h latency.Histogram
	h.Observe(10*time.Millisecond, true)
	h.Observe(30*time.Millisecond, false)
	var r latency.Rows
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	if err := r.Add(7, 60, start, &h); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 1 || r.EndpointIds[0] != 7 || r.Resolutions[0] != 60 || !r.BucketStarts[0].Equal(start) ||
		r.Counts[0] != 2 || r.OkCounts[0] != 1 || r.FailCounts[0] != 1 || r.SumsMs[0] != latency.Ms(h.Sum()) ||
		r.P50sMs[0] != latency.Ms(h.Quantile(0.5)) || r.P99sMs[0] != latency.Ms(h.Quantile(0.99)) {
		t.Fatalf("%+v", r)
	}
	var back latency.Histogram
	if err := back.UnmarshalBinary(r.Buckets[0]); err != nil || back.Count() != 2 {
		t.Fatalf("buckets: %v, count %d", err, back.Count())
	}
}
