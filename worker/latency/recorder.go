package latency

import (
	"sync"
	"time"
)

// Key identifies one histogram slot: an endpoint and the minute in which
// its attempts started. Keys returned by Recorder.Drain have Minute
// truncated to the minute, in UTC and without a monotonic reading, so they
// compare equal with == and work as map keys.
type Key struct {
	EndpointID int64
	Minute     time.Time
}

// numShards spreads endpoints over independently locked maps, so senders
// for different endpoints rarely wait on each other. A power of two keeps
// the shard pick a multiply and a shift.
const (
	shardBits = 6
	numShards = 1 << shardBits
)

// Recorder aggregates attempt durations in memory, per endpoint and minute,
// from the delivery worker's concurrent senders, and hands them to the
// flusher, which merges them into latency_histograms at least every 10 s
// (DESIGN §7). It is safe for concurrent use. Each Observe holds one shard's
// lock for a map lookup and a bucket increment; only the first sample of an
// endpoint in a minute, or one far outside its usual latency, allocates.
//
// The zero value is ready to use; NewRecorder is the conventional
// constructor. A Recorder must not be copied after first use.
type Recorder struct {
	shards [numShards]shard
}

type shard struct {
	mu    sync.Mutex
	slots map[slot]*Histogram
	// Pad to a cache line so two busy shards never share one, which would
	// make their locks contend even though they are independent.
	_ [48]byte
}

// histogram is k's histogram, made on first use; the caller holds s.mu.
func (s *shard) histogram(k slot) *Histogram {
	h := s.slots[k]
	if h == nil {
		if s.slots == nil {
			s.slots = make(map[slot]*Histogram)
		}
		h = new(Histogram)
		s.slots[k] = h
	}
	return h
}

// slot is Key as the hot path uses it: integers hash faster than a
// time.Time, and cannot differ by location or monotonic reading.
type slot struct {
	endpointID int64
	minute     int64 // minutes since the Unix epoch
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Observe records one attempt of endpointID that started at at (wall clock;
// it picks the minute slot) and took d (measured on the monotonic clock by
// the caller). ok reports whether the attempt succeeded.
func (r *Recorder) Observe(endpointID int64, at time.Time, d time.Duration, ok bool) {
	k := slot{endpointID: endpointID, minute: unixMinute(at)}
	s := r.shard(endpointID)
	s.mu.Lock()
	s.histogram(k).Observe(d, ok)
	s.mu.Unlock()
}

// Drain returns everything recorded since the previous Drain and forgets it;
// the caller owns the returned histograms. The flusher merges each into its
// stored row. Observations that race with Drain land either in the returned
// map or in the next one, never in neither.
func (r *Recorder) Drain() map[Key]*Histogram {
	out := make(map[Key]*Histogram)
	for i := range r.shards {
		s := &r.shards[i]
		// Swap the map rather than copy it, so senders wait only for the swap.
		s.mu.Lock()
		slots := s.slots
		s.slots = nil
		s.mu.Unlock()
		for k, h := range slots {
			out[Key{EndpointID: k.endpointID, Minute: time.Unix(k.minute*60, 0).UTC()}] = h
		}
	}
	return out
}

// Restore merges histograms returned by Drain back into r, for a flusher
// whose transaction rolled back, so that the next flush writes them again
// together with whatever was recorded since. Call it only when the flush
// certainly did not commit: restoring a committed flush counts its attempts
// twice. Restore copies the histograms; m is not retained. Keys need not
// come from Drain: Minute is truncated to its minute.
func (r *Recorder) Restore(m map[Key]*Histogram) {
	for key, src := range m {
		if src == nil || src.Count() == 0 {
			continue
		}
		k := slot{endpointID: key.EndpointID, minute: unixMinute(key.Minute)}
		s := r.shard(key.EndpointID)
		s.mu.Lock()
		s.histogram(k).Merge(src)
		s.mu.Unlock()
	}
}

// Len returns the number of endpoint-minute slots waiting to be drained.
// It grows while flushes keep failing, which makes it the gauge to alert on.
func (r *Recorder) Len() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += len(s.slots)
		s.mu.Unlock()
	}
	return n
}

// shard picks the shard of an endpoint. Endpoint ids are sequential, so a
// Fibonacci hash spreads neighbours instead of taking the low bits.
func (r *Recorder) shard(endpointID int64) *shard {
	return &r.shards[(uint64(endpointID)*0x9E3779B97F4A7C15)>>(64-shardBits)]
}

// unixMinute returns the minutes since the Unix epoch of t, rounding down
// also before 1970.
func unixMinute(t time.Time) int64 {
	sec := t.Unix()
	m := sec / 60
	if sec%60 < 0 {
		m--
	}
	return m
}
