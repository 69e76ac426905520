package latency_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

// benchDurations are realistic delivery latencies: log-normal around 200 ms
// with a tail into seconds. A power-of-two length makes indexing a mask.
func benchDurations() []time.Duration {
	r := newRand(42)
	ds := make([]time.Duration, 4096)
	for i := range ds {
		ds[i] = logNormal(r, 200*ms, 1)
	}
	return ds
}

// minuteHistogram is one busy endpoint-minute: 1000 attempts.
func minuteHistogram(seed uint64) *latency.Histogram {
	r := newRand(seed)
	var h latency.Histogram
	for range 1000 {
		h.Observe(logNormal(r, 200*ms, 1), r.Float64() < 0.97)
	}
	return &h
}

func BenchmarkBucketOf(b *testing.B) {
	ds := benchDurations()
	i, sink := 0, 0
	for b.Loop() {
		sink += latency.BucketOf(ds[i&(len(ds)-1)])
		i++
	}
	_ = sink
}

func BenchmarkObserve(b *testing.B) {
	ds := benchDurations()
	var h latency.Histogram
	for _, d := range ds {
		h.Observe(d, true) // steady state: the bucket window is in place
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Observe(ds[i&(len(ds)-1)], i&31 != 0)
		i++
	}
}

func BenchmarkRecorderObserve(b *testing.B) {
	const endpoints = 1000
	ds := benchDurations()
	rec := latency.NewRecorder()
	for i := range endpoints {
		for _, d := range ds[:64] {
			rec.Observe(int64(i), t0, d, true)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			rec.Observe(int64(i%endpoints), t0, ds[i&(len(ds)-1)], true)
			i++
		}
	})
}

func BenchmarkMerge(b *testing.B) {
	b.Run("minute into day", func(b *testing.B) {
		src := minuteHistogram(1)
		var dst latency.Histogram
		dst.Merge(src)
		b.ReportAllocs()
		for b.Loop() {
			dst.Merge(src)
		}
	})
	b.Run("24 h of minutes", func(b *testing.B) {
		// What the health refresher does per endpoint when it reads minute
		// rows only (DESIGN §7 refreshes every 60 s).
		minutes := make([]*latency.Histogram, 1440)
		for i := range minutes {
			minutes[i] = minuteHistogram(uint64(i))
		}
		b.ReportAllocs()
		for b.Loop() {
			var day latency.Histogram
			for _, m := range minutes {
				day.Merge(m)
			}
		}
	})
}

func BenchmarkQuantile(b *testing.B) {
	var day latency.Histogram
	for i := range 1440 {
		day.Merge(minuteHistogram(uint64(i)))
	}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}} {
		b.Run(q.name, func(b *testing.B) {
			var sink time.Duration
			for b.Loop() {
				sink += day.Quantile(q.q)
			}
			_ = sink
		})
	}
}

func BenchmarkMarshal(b *testing.B) {
	h := minuteHistogram(1)
	b.Run("MarshalBinary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.MarshalBinary(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendBinary reusing a buffer", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = h.AppendBinary(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalBinary", func(b *testing.B) {
		row, err := h.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(row)))
		b.ReportAllocs()
		var dst latency.Histogram
		for b.Loop() {
			if err := dst.UnmarshalBinary(row); err != nil {
				b.Fatal(err)
			}
		}
	})
}
