package latency

import "time"

// The 24 h latency series behind every endpoint's sparkline and chart:
// SparkSlots slots of SparkStep, each from the histograms of that
// resolution, the last one the slot now is in. The worker caches it per
// endpoint; the dashboard draws it (the endpoints table folds pairs of
// slots into one point).
const (
	SparkStep  = 15 * time.Minute
	SparkSlots = 96
)

// SparkStart is the start of the series that ends in now's slot.
func SparkStart(now time.Time) time.Time {
	return now.UTC().Truncate(SparkStep).Add(-(SparkSlots - 1) * SparkStep)
}
