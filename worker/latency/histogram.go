package latency

import (
	"math"
	"time"
)

// Histogram counts the attempts of one endpoint over one time slot: a minute
// in the Recorder and in latency_histograms, an hour in rollups, 24 h when
// the health refresher merges those.
//
// Besides the bucket counts it keeps exact totals, the exact fastest and
// slowest sample (so P0, P100 and one- or two-sample histograms are exact, and
// durations outside [Min, Max] keep their true extremes) and a saturating sum.
//
// The zero value is an empty histogram ready to use. A Histogram is not safe
// for concurrent use; Recorder is. Copying a Histogram value shares its
// bucket storage; to copy one, Merge it into a zero Histogram.
type Histogram struct {
	ok, fail uint64
	sum      time.Duration // saturates at math.MaxInt64 instead of wrapping
	min, max time.Duration // valid only while ok+fail > 0

	// counts[j] is the count of bucket off+j. Only the window of buckets an
	// endpoint actually uses is allocated (a dense store, as in DDSketch):
	// Observe stays an index and an increment, and a typical endpoint holds
	// about a kilobyte instead of the 6 KiB that all NumBuckets would take.
	// Zero counts inside the window are allowed; buckets outside it are zero.
	off    int
	counts []uint64
}

// initialMargin is how many buckets either side of the first sample the
// window starts with: 1.02^16 ≈ ±37 %, enough for the usual spread of one
// endpoint's latency without a second allocation.
const initialMargin = 16

// Observe counts one attempt that took d; ok reports whether it succeeded.
// A negative d, which a monotonic clock cannot produce, counts as zero.
// Observe allocates only when d lands outside the window of buckets
// allocated so far, so in steady state it is allocation-free.
func (h *Histogram) Observe(d time.Duration, ok bool) {
	d = max(d, 0)
	i := BucketOf(d)
	if uint(i-h.off) >= uint(len(h.counts)) {
		h.cover(i, i)
	}
	h.counts[i-h.off]++

	if h.ok+h.fail == 0 {
		h.min, h.max = d, d
	} else {
		h.min = min(h.min, d)
		h.max = max(h.max, d)
	}
	if ok {
		h.ok++
	} else {
		h.fail++
	}
	h.sum = addSaturating(h.sum, d)
}

// Merge adds o's bucket counts and totals into h, so the quantiles of h
// become the quantiles of every sample of both. Percentiles are only ever
// computed from merged buckets: averaging per-minute P99s would
// underestimate the P99 of the hour. o may be nil (no-op) or h itself.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.ok+o.fail == 0 {
		return
	}
	// The non-zero buckets of o are exactly those between its extremes.
	first, last := BucketOf(o.min), BucketOf(o.max)
	// Copy o's fields before cover may replace h.counts: o may be h.
	ok, fail, sum, lo, hi := o.ok, o.fail, o.sum, o.min, o.max
	src := o.counts[first-o.off : last-o.off+1]

	h.cover(first, last)
	dst := h.counts[first-h.off : last-h.off+1]
	for k, c := range src {
		dst[k] += c
	}

	if h.ok+h.fail == 0 {
		h.min, h.max = lo, hi
	} else {
		h.min = min(h.min, lo)
		h.max = max(h.max, hi)
	}
	h.ok += ok
	h.fail += fail
	h.sum = addSaturating(h.sum, sum)
}

// cover grows the bucket window so it holds buckets first through last.
func (h *Histogram) cover(first, last int) {
	if len(h.counts) == 0 {
		lo := max(first-initialMargin, 0)
		hi := min(last+initialMargin+1, NumBuckets)
		h.counts, h.off = make([]uint64, hi-lo), lo
		return
	}
	lo, hi := h.off, h.off+len(h.counts)
	if first >= lo && last < hi {
		return
	}
	// Grow the overflowing side by at least half the current width, so a
	// latency that drifts bucket by bucket reallocates a handful of times,
	// not once per new bucket.
	grow := max(len(h.counts)/2, initialMargin)
	if first < lo {
		lo = max(min(first, lo-grow), 0)
	}
	if last >= hi {
		hi = min(max(last+1, hi+grow), NumBuckets)
	}
	counts := make([]uint64, hi-lo)
	copy(counts[h.off-lo:], h.counts)
	h.counts, h.off = counts, lo
}

// Reset empties h but keeps its bucket window, so a histogram reused for the
// next slot does not allocate again.
func (h *Histogram) Reset() {
	clear(h.counts)
	*h = Histogram{off: h.off, counts: h.counts}
}

// Count returns the number of attempts observed.
func (h *Histogram) Count() int64 { return int64(h.ok + h.fail) }

// OK returns the number of successful attempts.
func (h *Histogram) OK() int64 { return int64(h.ok) }

// Fail returns the number of failed attempts.
func (h *Histogram) Fail() int64 { return int64(h.fail) }

// Sum returns the total duration of all attempts. It saturates at the
// largest time.Duration (about 292 years) rather than wrapping negative.
func (h *Histogram) Sum() time.Duration { return h.sum }

// Mean returns the average duration, or 0 for an empty histogram. It is
// kept within [Min, Max], which only matters once Sum has saturated.
// Operators should not be shown it alone: a fast mean hides a slow tail.
func (h *Histogram) Mean() time.Duration {
	n := h.ok + h.fail
	if n == 0 {
		return 0
	}
	return min(max(h.sum/time.Duration(n), h.min), h.max)
}

// Min returns the exact shortest duration observed, or 0 when empty.
func (h *Histogram) Min() time.Duration {
	if h.ok+h.fail == 0 {
		return 0
	}
	return h.min
}

// Max returns the exact longest duration observed, or 0 when empty.
func (h *Histogram) Max() time.Duration {
	if h.ok+h.fail == 0 {
		return 0
	}
	return h.max
}

// Quantile estimates the q-quantile of the observed durations with the
// convention of PostgreSQL percentile_cont: over the n samples sorted
// ascending, rank r = q·(n-1), and the result interpolates linearly between
// the samples at floor(r) and ceil(r). Each of those two samples is estimated
// from its bucket (see sampleAt), so the result is within sqrt(Factor)-1
// ≈ 1 % of percentile_cont over the raw samples whenever they lie in
// [Min, Max], even when the rank falls in a gap between two clusters, where
// picking a single bucket would be off by the whole gap.
//
// q is clamped to [0, 1] (NaN counts as 0). Quantile(0) and Quantile(1) are
// the exact Min and Max. An empty histogram returns 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.ok + h.fail
	if n == 0 {
		return 0
	}
	if !(q > 0) {
		q = 0
	}
	q = min(q, 1)
	rank := q * float64(n-1)
	k := uint64(rank)
	if k >= n-1 {
		return h.max
	}
	lo := h.sampleAt(k)
	frac := rank - float64(k)
	if frac == 0 {
		return lo
	}
	hi := h.sampleAt(k + 1)
	return lo + time.Duration(math.Round(frac*float64(hi-lo)))
}

// sampleAt estimates the k-th smallest sample (0-based). The first and last
// are exact. An interior sample is the geometric midpoint of its bucket,
// after narrowing the bucket to [min, max]: that midpoint is within
// sqrt(Factor)-1 of every value the bucket can hold, and the narrowing makes
// a histogram whose samples sit in one bucket (a constant latency) nearly
// exact.
func (h *Histogram) sampleAt(k uint64) time.Duration {
	n := h.ok + h.fail
	if k == 0 {
		return h.min
	}
	if k >= n-1 {
		return h.max
	}
	var seen uint64
	for j, c := range h.counts {
		seen += c
		if seen > k {
			return h.midpoint(h.off + j)
		}
	}
	return h.max // unreachable while the bucket counts add up to n
}

// midpoint returns the representative value of bucket i.
func (h *Histogram) midpoint(i int) time.Duration {
	lo := float64(Min) * math.Pow(Factor, float64(i))
	hi := lo * Factor
	if i == 0 || lo < float64(h.min) {
		lo = float64(h.min)
	}
	if i == NumBuckets-1 || hi > float64(h.max) {
		hi = float64(h.max)
	}
	var m float64
	if i == 0 {
		// Below Min the bucket is not geometric and may start at zero, where
		// a geometric mean collapses; the middle of the range errs by at most
		// 50 µs there.
		m = (lo + hi) / 2
	} else {
		m = math.Sqrt(lo * hi)
	}
	return min(max(time.Duration(math.Round(m)), h.min), h.max)
}

// addSaturating returns a+b for non-negative a and b, or the largest
// Duration if that overflows.
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
