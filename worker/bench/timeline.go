package bench

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/worker/latency"
)

// A timeline is a steady run's latency second by second, as the receiver
// sees it: for each second of arrival, a histogram of the times from each
// event's creation to its request's arrival. A minute's p99 is the worst
// 0.6 s of that minute; the timeline shows which seconds those were, to set
// beside what else ran then (retention passes, checkpoints, GC). It is kept
// in memory as one log-bucket histogram a second, so a soak's memory does
// not grow with its deliveries.
//
// The creation time is read from the event id itself: ingest gives every
// event a UUIDv7 (uuid.NewV7) just before its transaction begins, whose
// first 48 bits are Unix milliseconds and whose next 12 (after the version)
// the fraction of that millisecond in 256-ns steps. A counted id (two ids
// in one 256-ns step) is at most a few steps late.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	secs  []latency.Histogram
}

// begin sets the timeline's second 0; nothing is counted before it is set.
func (t *timeline) begin(start time.Time) {
	t.mu.Lock()
	t.start = start
	t.mu.Unlock()
}

// v7Time is the creation time written into a UUIDv7 by uuid.NewV7.
func v7Time(id uuid.UUID) (time.Time, bool) {
	if id.Version() != 7 {
		return time.Time{}, false
	}
	ts := binary.BigEndian.Uint64(id[:8])
	ms, frac := int64(ts>>16), int64(ts&0xfff)
	return time.UnixMilli(ms).Add(time.Duration(frac << 8)), true
}

// add counts a request for event id that arrived at at. Ids that are not
// UUIDv7 and arrivals before the timeline's start are not counted.
func (t *timeline) add(id string, at time.Time) {
	if t == nil {
		return
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return
	}
	created, ok := v7Time(u)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() || at.Before(t.start) {
		return
	}
	s := int(at.Sub(t.start) / time.Second)
	for len(t.secs) <= s {
		t.secs = append(t.secs, latency.Histogram{})
	}
	t.secs[s].Observe(at.Sub(created), true)
}

// write prints the timeline as CSV: the second (from the start), the
// arrivals in it, and their p50, p99 and slowest, in milliseconds.
func (t *timeline) write(out io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := fmt.Fprintln(out, "second,arrivals,p50_ms,p99_ms,max_ms"); err != nil {
		return err
	}
	for s := range t.secs {
		h := &t.secs[s]
		if h.Count() == 0 {
			if _, err := fmt.Fprintf(out, "%d,0,,,\n", s); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(out, "%d,%d,%.2f,%.2f,%.2f\n", s, h.Count(),
			latency.Ms(h.Quantile(0.50)), latency.Ms(h.Quantile(0.99)), latency.Ms(h.Quantile(1))); err != nil {
			return err
		}
	}
	return nil
}

// medianP99 is the median of the p99s of seconds from (inclusive) to to
// (exclusive) that had arrivals; 0 when none had.
func (t *timeline) medianP99(from, to int) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var p99s []time.Duration
	for s := max(from, 0); s < min(to, len(t.secs)); s++ {
		if t.secs[s].Count() > 0 {
			p99s = append(p99s, t.secs[s].Quantile(0.99))
		}
	}
	if len(p99s) == 0 {
		return 0
	}
	slices.Sort(p99s)
	return p99s[len(p99s)/2]
}

// quantile is the q-quantile of every arrival in seconds from (inclusive)
// to to (exclusive), taken together; 0 when there were none.
func (t *timeline) quantile(from, to int, q float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var h latency.Histogram
	for s := max(from, 0); s < min(to, len(t.secs)); s++ {
		h.Merge(&t.secs[s])
	}
	return h.Quantile(q)
}
