package latency

import (
	"math"
	"time"
)

// Point is one slot of a latency sparkline. Count is 0 and the percentiles
// are 0 for a slot without attempts; a chart should draw a gap there, not a
// fast response.
type Point struct {
	Start         time.Time
	Count         int64
	P50, P95, P99 time.Duration
}

// Series merges hists (keyed by the start of the slot each covers, normally
// a minute) into n consecutive slots of width step that end at end
// (exclusive), oldest first. Slot j covers [end-(n-j)·step, end-(n-j-1)·step);
// a histogram belongs to the slot that contains its start time, and those
// outside all slots are ignored. Each slot's percentiles come from its merged
// buckets. Series returns nil if n or step is not positive, or if n·step
// overflows a time.Duration.
//
// Align end to step (for 24 h of 15-minute points, end truncated to 15
// minutes): a minute histogram is counted whole in the slot of its start.
func Series(hists map[time.Time]*Histogram, end time.Time, step time.Duration, n int) []Point {
	if n <= 0 || step <= 0 || step > math.MaxInt64/time.Duration(n) {
		return nil
	}
	end = end.Round(0) // drop any monotonic reading: slots are wall-clock times
	start := end.Add(-time.Duration(n) * step)
	slots := make([]Histogram, n)
	for t, h := range hists {
		if h == nil || t.Before(start) || !t.Before(end) {
			continue
		}
		slots[int(t.Sub(start)/step)].Merge(h)
	}
	points := make([]Point, n)
	for j := range slots {
		h := &slots[j]
		points[j] = Point{
			Start: start.Add(time.Duration(j) * step),
			Count: h.Count(),
			P50:   h.Quantile(0.50),
			P95:   h.Quantile(0.95),
			P99:   h.Quantile(0.99),
		}
	}
	return points
}
