package latency_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

func TestBucketOf(t *testing.T) {
	last := latency.NumBuckets - 1
	_, hi0 := latency.BucketBounds(0)
	tests := []struct {
		name string
		d    time.Duration
		want int
	}{
		{"negative is bucket 0", -time.Second, 0},
		{"zero is bucket 0", 0, 0},
		{"below Min is bucket 0", 10 * time.Microsecond, 0},
		{"Min is bucket 0", latency.Min, 0},
		{"just below Min·Factor is bucket 0", hi0 - 1, 0},
		{"Min·Factor starts bucket 1", hi0, 1},
		{"a decade above Min", 10 * latency.Min, 116},
		{"Max is the last bucket", latency.Max, last},
		{"an hour is clamped to the last bucket", time.Hour, last},
		{"the longest duration is clamped to the last bucket", math.MaxInt64, last},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := latency.BucketOf(tt.d); got != tt.want {
				t.Fatalf("BucketOf(%v) = %d, want %d", tt.d, got, tt.want)
			}
		})
	}
}

func TestBucketBounds(t *testing.T) {
	t.Run("bounds agree with BucketOf to the nanosecond", func(t *testing.T) {
		for i := range latency.NumBuckets {
			lo, hi := latency.BucketBounds(i)
			if got := latency.BucketOf(lo); got != i {
				t.Fatalf("BucketOf(lo of %d = %v) = %d", i, lo, got)
			}
			if got := latency.BucketOf(hi - 1); got != i {
				t.Fatalf("BucketOf(hi-1 of %d = %v) = %d", i, hi-1, got)
			}
			if i > 0 {
				if got := latency.BucketOf(lo - 1); got != i-1 {
					t.Fatalf("BucketOf(lo-1 of %d = %v) = %d", i, lo-1, got)
				}
			}
		}
	})
	t.Run("buckets tile the range", func(t *testing.T) {
		lo0, _ := latency.BucketBounds(0)
		if lo0 != latency.Min {
			t.Fatalf("bucket 0 starts at %v, want Min", lo0)
		}
		for i := 1; i < latency.NumBuckets; i++ {
			_, prevHi := latency.BucketBounds(i - 1)
			lo, _ := latency.BucketBounds(i)
			if lo != prevHi {
				t.Fatalf("bucket %d starts at %v, previous ends at %v", i, lo, prevHi)
			}
		}
	})
	t.Run("each bucket is Factor wide", func(t *testing.T) {
		for i := range latency.NumBuckets {
			lo, hi := latency.BucketBounds(i)
			if ratio := float64(hi) / float64(lo); math.Abs(ratio-latency.Factor) > 1e-4 {
				t.Fatalf("bucket %d [%v, %v) has ratio %v, want %v", i, lo, hi, ratio, latency.Factor)
			}
		}
	})
	t.Run("last bucket holds Max", func(t *testing.T) {
		lo, hi := latency.BucketBounds(latency.NumBuckets - 1)
		if latency.Max < lo || latency.Max >= hi {
			t.Fatalf("last bucket [%v, %v) does not hold Max %v", lo, hi, latency.Max)
		}
	})
	t.Run("BucketOf is monotonic", func(t *testing.T) {
		r := newRand(1)
		ds := make([]time.Duration, 100_000)
		for i := range ds {
			ds[i] = time.Duration(r.Int64N(int64(2 * latency.Max)))
		}
		slices.Sort(ds)
		prev := 0
		for _, d := range ds {
			b := latency.BucketOf(d)
			if b < prev {
				t.Fatalf("BucketOf(%v) = %d after a shorter duration got %d", d, b, prev)
			}
			prev = b
		}
	})
	for name, i := range map[string]int{"negative index panics": -1, "index NumBuckets panics": latency.NumBuckets} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("BucketBounds(%d) did not panic", i)
				}
			}()
			latency.BucketBounds(i)
		})
	}
}
