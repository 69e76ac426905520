package latency_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// attempt is one synthetic delivery attempt.
type attempt struct {
	endpoint int64
	at       time.Time
	d        time.Duration
	ok       bool
}

// attempts returns n deterministic attempts over 40 endpoints and five
// minutes, so slots are shared across goroutines and shards.
func attempts(seed uint64, n int) []attempt {
	r := newRand(seed)
	as := make([]attempt, n)
	for i := range as {
		as[i] = attempt{
			endpoint: r.Int64N(40) + 1,
			at:       t0.Add(time.Duration(r.Int64N(int64(5 * time.Minute)))),
			d:        logNormal(r, 150*ms, 1),
			ok:       r.Float64() < 0.95,
		}
	}
	return as
}

// sequential builds the expected slots the slow, obviously correct way.
func sequential(as []attempt) map[latency.Key]*latency.Histogram {
	want := make(map[latency.Key]*latency.Histogram)
	for _, a := range as {
		k := latency.Key{EndpointID: a.endpoint, Minute: a.at.UTC().Truncate(time.Minute)}
		if want[k] == nil {
			want[k] = new(latency.Histogram)
		}
		want[k].Observe(a.d, a.ok)
	}
	return want
}

func mergeInto(dst, src map[latency.Key]*latency.Histogram) {
	for k, h := range src {
		if dst[k] == nil {
			dst[k] = new(latency.Histogram)
		}
		dst[k].Merge(h)
	}
}

func assertEqualSlots(t *testing.T, got, want map[latency.Key]*latency.Histogram) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d slots, want %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("slot %d@%v missing", k.EndpointID, k.Minute)
		}
		assertEqualHistograms(t, g, w)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const senders, perSender = 16, 5000
	rec := latency.NewRecorder()
	work := make([][]attempt, senders)
	var all []attempt
	for i := range work {
		work[i] = attempts(uint64(100+i), perSender)
		all = append(all, work[i]...)
	}

	// A flusher drains while senders observe, as in production.
	got := make(map[latency.Key]*latency.Histogram)
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				mergeInto(got, rec.Drain())
			}
		}
	}()

	var wg sync.WaitGroup
	for _, as := range work {
		wg.Go(func() {
			for _, a := range as {
				rec.Observe(a.endpoint, a.at, a.d, a.ok)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-flushed
	mergeInto(got, rec.Drain())

	assertEqualSlots(t, got, sequential(all))
}

func TestRecorderKeys(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Now() // carries a monotonic reading
	tests := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"minute is truncated", t0, time.Date(2026, 3, 14, 15, 9, 0, 0, time.UTC)},
		{"other zones land in the same UTC minute", t0.In(tokyo), time.Date(2026, 3, 14, 15, 9, 0, 0, time.UTC)},
		{"monotonic reading is dropped", now, time.Unix(now.Unix()/60*60, 0).UTC()},
		{"before 1970 rounds down", time.Unix(-30, 0), time.Unix(-60, 0).UTC()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := latency.NewRecorder()
			rec.Observe(7, tt.at, 10*ms, true)
			got := rec.Drain()
			want := latency.Key{EndpointID: 7, Minute: tt.want}
			if _, ok := got[want]; !ok || len(got) != 1 {
				t.Fatalf("Drain() = %v, want exactly key %v", got, want)
			}
		})
	}
}

func TestRecorderDrainRestore(t *testing.T) {
	before, after := attempts(1, 3000), attempts(2, 3000)

	t.Run("drain then restore loses nothing", func(t *testing.T) {
		rec := latency.NewRecorder()
		for _, a := range before {
			rec.Observe(a.endpoint, a.at, a.d, a.ok)
		}
		failed := rec.Drain()
		// Senders keep recording while the flush fails.
		for _, a := range after {
			rec.Observe(a.endpoint, a.at, a.d, a.ok)
		}
		rec.Restore(failed)
		assertEqualSlots(t, rec.Drain(), sequential(append(append([]attempt(nil), before...), after...)))
	})
	t.Run("drain empties the recorder", func(t *testing.T) {
		rec := latency.NewRecorder()
		for _, a := range before {
			rec.Observe(a.endpoint, a.at, a.d, a.ok)
		}
		if rec.Len() == 0 {
			t.Fatal("Len() = 0 with slots pending")
		}
		rec.Drain()
		if n := rec.Len(); n != 0 {
			t.Fatalf("Len() = %d after Drain", n)
		}
		if got := rec.Drain(); got == nil || len(got) != 0 {
			t.Fatalf("second Drain() = %v, want an empty map", got)
		}
	})
	t.Run("restore copies, so the caller may reuse its map", func(t *testing.T) {
		rec := latency.NewRecorder()
		h := histogramOf(10 * ms)
		rec.Restore(map[latency.Key]*latency.Histogram{{EndpointID: 1, Minute: t0}: h})
		h.Observe(time.Hour, false)
		got := rec.Drain()
		k := latency.Key{EndpointID: 1, Minute: t0.Truncate(time.Minute)}
		assertEqualHistograms(t, got[k], histogramOf(10*ms))
	})
	t.Run("restore skips nil and empty histograms", func(t *testing.T) {
		rec := latency.NewRecorder()
		rec.Restore(map[latency.Key]*latency.Histogram{{EndpointID: 1, Minute: t0}: nil, {EndpointID: 2, Minute: t0}: {}})
		if n := rec.Len(); n != 0 {
			t.Fatalf("Len() = %d, want 0", n)
		}
	})
	t.Run("zero value recorder works", func(t *testing.T) {
		var rec latency.Recorder
		rec.Observe(1, t0, 10*ms, true)
		if got := rec.Drain(); len(got) != 1 {
			t.Fatalf("Drain() = %v", got)
		}
	})
}

func TestObserveDoesNotAllocate(t *testing.T) {
	r := newRand(5)
	ds := make([]time.Duration, 1024)
	for i := range ds {
		ds[i] = logNormal(r, 200*ms, 0.8)
	}
	t.Run("histogram in steady state", func(t *testing.T) {
		var h latency.Histogram
		for _, d := range ds {
			h.Observe(d, true)
		}
		i := 0
		if n := testing.AllocsPerRun(10_000, func() {
			h.Observe(ds[i%len(ds)], true)
			i++
		}); n != 0 {
			t.Fatalf("Histogram.Observe allocates %v times per call", n)
		}
	})
	t.Run("recorder in steady state", func(t *testing.T) {
		rec := latency.NewRecorder()
		for i, d := range ds {
			rec.Observe(int64(i%8), t0, d, true)
		}
		i := 0
		if n := testing.AllocsPerRun(10_000, func() {
			rec.Observe(int64(i%8), t0, ds[i%len(ds)], true)
			i++
		}); n != 0 {
			t.Fatalf("Recorder.Observe allocates %v times per call", n)
		}
	})
}
