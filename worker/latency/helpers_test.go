package latency_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

// newRand returns a deterministic source, so a failing accuracy figure can
// be reproduced.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5eed)) }

// logNormal draws a duration whose logarithm is normal around median with
// the given sigma.
func logNormal(r *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
}

// histogramOf observes every duration, alternating ok and failed attempts.
func histogramOf(ds ...time.Duration) *latency.Histogram {
	var h latency.Histogram
	for i, d := range ds {
		h.Observe(d, i%2 == 0)
	}
	return &h
}

// encode returns the binary form, which is unique per histogram and so
// serves as an equality check.
func encode(t testing.TB, h *latency.Histogram) []byte {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	return b
}

func assertEqualHistograms(t testing.TB, got, want *latency.Histogram) {
	t.Helper()
	if g, w := encode(t, got), encode(t, want); !bytes.Equal(g, w) {
		t.Fatalf("histograms differ:\n got count=%d sum=%v min=%v max=%v % x\nwant count=%d sum=%v min=%v max=%v % x",
			got.Count(), got.Sum(), got.Min(), got.Max(), g,
			want.Count(), want.Sum(), want.Min(), want.Max(), w)
	}
}
