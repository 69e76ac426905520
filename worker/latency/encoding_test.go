package latency_test

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

// The binary form is what the flusher and the health refresher exchange
// through PostgreSQL, so the standard interfaces are part of the contract.
var (
	_ encoding.BinaryMarshaler   = (*latency.Histogram)(nil)
	_ encoding.BinaryAppender    = (*latency.Histogram)(nil)
	_ encoding.BinaryUnmarshaler = (*latency.Histogram)(nil)
)

// roundTripCases are histograms whose binary form must survive a round trip;
// they also seed FuzzUnmarshal.
func roundTripCases() map[string]*latency.Histogram {
	r := newRand(11)
	var wide latency.Histogram
	for range 10_000 {
		wide.Observe(logNormal(r, 300*ms, 2), r.Float64() < 0.9)
	}
	reset := histogramOf(10*ms, 20*ms)
	reset.Reset()
	var saturated latency.Histogram
	saturated.Observe(math.MaxInt64, true)
	saturated.Observe(math.MaxInt64, false)
	return map[string]*latency.Histogram{
		"empty":                       {},
		"reset keeps no counts":       reset,
		"single sample":               histogramOf(42 * ms),
		"failures only":               func() *latency.Histogram { var h latency.Histogram; h.Observe(time.Second, false); return &h }(),
		"zero and sub-Min durations":  histogramOf(0, time.Microsecond, 99*time.Microsecond),
		"beyond Max":                  histogramOf(time.Hour, 2*time.Hour),
		"wide log-normal":             &wide,
		"saturated sum and extremes":  &saturated,
		"first and last bucket alone": histogramOf(latency.Min, latency.Max),
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for name, h := range roundTripCases() {
		t.Run(name, func(t *testing.T) {
			b := encode(t, h)
			var got latency.Histogram
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			assertEqualHistograms(t, &got, h)
			for _, q := range []float64{0, 0.5, 0.95, 0.99, 1} {
				if g, w := got.Quantile(q), h.Quantile(q); g != w {
					t.Errorf("Quantile(%v) = %v after round trip, %v before", q, g, w)
				}
			}
			if got.Sum() != h.Sum() || got.OK() != h.OK() || got.Fail() != h.Fail() {
				t.Errorf("counters changed: sum %v/%v ok %d/%d fail %d/%d",
					got.Sum(), h.Sum(), got.OK(), h.OK(), got.Fail(), h.Fail())
			}
		})
	}
	t.Run("AppendBinary appends to what is there", func(t *testing.T) {
		h := histogramOf(10*ms, 20*ms)
		b, err := h.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) || !bytes.Equal(b[len("prefix"):], encode(t, h)) {
			t.Fatalf("AppendBinary = % x", b)
		}
	})
	t.Run("decoding into a used histogram replaces it", func(t *testing.T) {
		cases := roundTripCases()
		for _, from := range []string{"empty", "single sample", "wide log-normal", "beyond Max"} {
			for _, to := range []string{"empty", "single sample", "wide log-normal", "first and last bucket alone"} {
				var dst latency.Histogram
				dst.Merge(cases[from])
				if err := dst.UnmarshalBinary(encode(t, cases[to])); err != nil {
					t.Fatalf("%s into %s: %v", to, from, err)
				}
				assertEqualHistograms(t, &dst, cases[to])
				dst.Observe(time.Second, true)
				want := latency.Histogram{}
				want.Merge(cases[to])
				want.Observe(time.Second, true)
				assertEqualHistograms(t, &dst, &want)
			}
		}
	})
	t.Run("decoded histogram keeps observing", func(t *testing.T) {
		var got latency.Histogram
		if err := got.UnmarshalBinary(encode(t, histogramOf(10*ms))); err != nil {
			t.Fatal(err)
		}
		got.Observe(time.Minute, false)
		assertEqualHistograms(t, &got, histogramOf(10*ms, time.Minute))
	})
}

func TestUnmarshalRejects(t *testing.T) {
	// header builds a version-1 prefix from uvarints.
	header := func(xs ...uint64) []byte {
		b := []byte{1}
		for _, x := range xs {
			b = binary.AppendUvarint(b, x)
		}
		return b
	}
	b100 := uint64(latency.BucketOf(100 * ms))
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty input", nil},
		{"unknown version", []byte{2, 0, 0}},
		{"trailing bytes after an empty histogram", header(0, 0, 0)},
		{"count overflows int64", header(math.MaxInt64, 1)},
		{"varint overflows 64 bits", append([]byte{1}, bytes.Repeat([]byte{0xff}, 11)...)},
		{"non-minimal varint", []byte{1, 0x81, 0x00, 0}},
		{"min above max", header(1, 0, uint64(100*ms), uint64(200*ms), uint64(100*ms), b100, 1)},
		{"duration overflows int64", header(1, 0, math.MaxUint64, uint64(100*ms), uint64(100*ms), b100, 1)},
		{"sum below count times min", header(2, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms), b100, 2)},
		{"sum above count times max", header(1, 0, uint64(300*ms), uint64(100*ms), uint64(100*ms), b100, 1)},
		{"no buckets", header(1, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms))},
		{"bucket counts short of count", header(2, 0, uint64(200*ms), uint64(100*ms), uint64(100*ms), b100, 1)},
		{"bucket counts above count", header(1, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms), b100, 2)},
		{"empty bucket encoded", header(1, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms), b100, 1, 1, 0)},
		{"bucket indexes not increasing", header(2, 0, uint64(200*ms), uint64(100*ms), uint64(100*ms), b100, 1, 0, 1)},
		{"bucket index beyond the last", header(1, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms), latency.NumBuckets, 1)},
		{"bucket delta runs past the last", header(2, 0, uint64(200*ms), uint64(100*ms), uint64(100*ms), b100, 1, latency.NumBuckets-b100, 1)},
		{"huge bucket delta", header(2, 0, uint64(200*ms), uint64(100*ms), uint64(100*ms), b100, 1, math.MaxUint64, 1)},
		{"min outside the first bucket", header(1, 0, uint64(100*ms), uint64(100*ms), uint64(100*ms), b100+5, 1)},
		{"max outside the last bucket", header(2, 0, uint64(300*ms), uint64(100*ms), uint64(200*ms), b100, 2)},
	}
	valid := encode(t, roundTripCases()["wide log-normal"])
	for n := range len(valid) {
		tests = append(tests, struct {
			name string
			in   []byte
		}{fmt.Sprintf("truncated to %d bytes", n), valid[:n]})
	}
	tests = append(tests, struct {
		name string
		in   []byte
	}{"trailing garbage", append(bytes.Clone(valid), 0x01)})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := histogramOf(7 * ms)
			before := encode(t, h)
			if err := h.UnmarshalBinary(tt.in); err == nil {
				t.Fatalf("UnmarshalBinary(% x) accepted corrupt input", tt.in)
			}
			if after := encode(t, h); !bytes.Equal(after, before) {
				t.Fatal("failed UnmarshalBinary changed the histogram")
			}
		})
	}
}

// FuzzUnmarshal feeds arbitrary bytes to UnmarshalBinary. It must never
// panic, and whatever it accepts must be a consistent histogram whose
// encoding is exactly the input (one histogram, one encoding).
func FuzzUnmarshal(f *testing.F) {
	for _, h := range roundTripCases() {
		b, err := h.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0x81, 0x00, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var h latency.Histogram
		if err := h.UnmarshalBinary(in); err != nil {
			return
		}
		out, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary after a successful decode: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("round trip changed the encoding:\n in % x\nout % x", in, out)
		}
		if h.Count() < 0 || h.OK()+h.Fail() != h.Count() {
			t.Fatalf("count %d, ok %d, fail %d", h.Count(), h.OK(), h.Fail())
		}
		prev := h.Min()
		for _, q := range []float64{0, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			v := h.Quantile(q)
			if v < prev || v > h.Max() {
				t.Fatalf("Quantile(%v) = %v outside [%v, %v]", q, v, prev, h.Max())
			}
			prev = v
		}
		if m := h.Mean(); h.Count() > 0 && (m < h.Min() || m > h.Max()) {
			t.Fatalf("Mean %v outside [%v, %v]", m, h.Min(), h.Max())
		}
		var merged latency.Histogram
		merged.Merge(&h)
		merged.Merge(&h)
		if merged.Count() != 2*h.Count() && h.Count() < math.MaxInt64/2 {
			t.Fatalf("merged count %d, want %d", merged.Count(), 2*h.Count())
		}
	})
}
