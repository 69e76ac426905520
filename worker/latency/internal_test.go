package latency

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

func TestBucketConstants(t *testing.T) {
	t.Run("lnFactor is ln(Factor)", func(t *testing.T) {
		want := math.Log1p(Factor - 1)
		if rel := math.Abs(lnFactor-want) / want; rel > 1e-15 {
			t.Fatalf("lnFactor = %v, want %v (relative error %g)", lnFactor, want, rel)
		}
	})
	t.Run("NumBuckets ends at the bucket of Max", func(t *testing.T) {
		want := int(math.Floor(math.Log(float64(Max)/float64(Min))/math.Log(Factor))) + 1
		if NumBuckets != want {
			t.Fatalf("NumBuckets = %d, want %d", NumBuckets, want)
		}
		if got := unclampedBucket(Max); got != NumBuckets-1 {
			t.Fatalf("unclamped bucket of Max = %d, want %d", got, NumBuckets-1)
		}
	})
	t.Run("Factor meets DESIGN's 2.5 % promise", func(t *testing.T) {
		if Factor > 1.05 {
			t.Fatalf("Factor = %v, DESIGN §2 allows at most 1.05", Factor)
		}
	})
}

func TestShardPadding(t *testing.T) {
	// Shards sit in an array; a size that is a multiple of a cache line keeps
	// each one's lock on its own line.
	if size := unsafe.Sizeof(shard{}); size%64 != 0 {
		t.Fatalf("shard is %d bytes, want a multiple of 64", size)
	}
}

func TestUnixMinute(t *testing.T) {
	tests := []struct {
		name string
		at   time.Time
		want int64
	}{
		{"epoch", time.Unix(0, 0), 0},
		{"end of first minute", time.Unix(59, 999_999_999), 0},
		{"second minute", time.Unix(60, 0), 1},
		{"before epoch rounds down", time.Unix(-1, 0), -1},
		{"exactly one minute before epoch", time.Unix(-60, 0), -1},
		{"just past one minute before epoch", time.Unix(-61, 0), -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unixMinute(tt.at); got != tt.want {
				t.Fatalf("unixMinute(%v) = %d, want %d", tt.at, got, tt.want)
			}
		})
	}
}

func TestShardSpread(t *testing.T) {
	// Endpoint ids are sequential; neighbours must not pile into one shard.
	var r Recorder
	used := map[*shard]bool{}
	for id := int64(1); id <= numShards; id++ {
		used[r.shard(id)] = true
	}
	if len(used) < numShards/2 {
		t.Fatalf("ids 1..%d use only %d of %d shards", numShards, len(used), numShards)
	}
}
