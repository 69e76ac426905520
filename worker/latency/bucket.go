package latency

import (
	"fmt"
	"math"
	"time"
)

// Factor is the ratio between consecutive bucket bounds. DESIGN §2 requires
// at most 1.05 (quantiles within ±2.5 %); 1.02 keeps the reported value, a
// point inside the bucket, within sqrt(1.02)-1 ≈ 0.995 % of every sample in
// that bucket, at the cost of about 800 buckets, of which a typical endpoint
// touches a hundred or so.
const Factor = 1.02

// Min and Max bound the range the buckets resolve. Anything faster than Min
// is counted in bucket 0 and anything slower than Max in the last bucket;
// the exact fastest and slowest samples are still kept by Histogram, so only
// interior quantiles of such samples lose precision. 100 µs is below any
// real network round trip and 10 min is far above any sensible endpoint
// timeout (DESIGN default 15 s).
const (
	Min = 100 * time.Microsecond
	Max = 10 * time.Minute
)

// NumBuckets is the number of buckets: Max falls in bucket NumBuckets-1,
// because ln(Max/Min)/ln(Factor) ≈ 788.14. TestBucketConstants keeps it
// true if Factor, Min or Max change.
const NumBuckets = 789

// lnFactor is ln(Factor); Go constants cannot call math.Log, and computing
// it per call would double the cost of BucketOf. TestBucketConstants checks it.
const (
	lnFactor    = 0.019802627296179713
	invLnFactor = 1 / lnFactor
)

// BucketOf returns the bucket that counts d: bucket i covers
// [Min·Factor^i, Min·Factor^(i+1)), except that bucket 0 also counts every
// duration below Min (including zero and negative ones) and bucket
// NumBuckets-1 every duration above Max.
//
// The bucket is floor(ln(d/Min)/ln(Factor)): a logarithm costs a few
// nanoseconds, so no lookup table (and no package-level state) is needed.
// The exact integer bounds are defined by this function; BucketBounds
// derives them from it so the two always agree to the nanosecond.
func BucketOf(d time.Duration) int {
	return min(unclampedBucket(d), NumBuckets-1)
}

// BucketBounds returns the nominal range [lo, hi) of bucket i, rounded up to
// whole nanoseconds: lo is the shortest duration BucketOf puts in bucket i
// and hi the shortest it puts in bucket i+1, so hi of one bucket is lo of the
// next. Bucket 0 additionally counts everything below Min and the last bucket
// everything from its hi upward; their nominal bounds are still reported,
// because that is what a chart axis needs. It panics if i is not in
// [0, NumBuckets), like an out-of-range index.
func BucketBounds(i int) (lo, hi time.Duration) {
	if i < 0 || i >= NumBuckets {
		panic(fmt.Sprintf("latency: bucket %d out of range [0, %d)", i, NumBuckets))
	}
	return bucketStart(i), bucketStart(i + 1)
}

// bucketStart returns the shortest duration that BucketOf maps to bucket i or
// above (ignoring the clamp at the last bucket). math.Pow lands within a
// nanosecond of the edge; the loops then settle it against BucketOf itself,
// which is monotonic, so the bounds can never disagree with the bucketing.
func bucketStart(i int) time.Duration {
	if i == 0 {
		return Min
	}
	d := time.Duration(math.Ceil(float64(Min) * math.Pow(Factor, float64(i))))
	for unclampedBucket(d-1) >= i {
		d--
	}
	for unclampedBucket(d) < i {
		d++
	}
	return d
}

// unclampedBucket is BucketOf without the clamp at the last bucket, so that
// the upper bound of the last bucket can be found the same way as the others.
func unclampedBucket(d time.Duration) int {
	if d < Min {
		return 0
	}
	return int(math.Log(float64(d)/float64(Min)) * invLnFactor)
}
