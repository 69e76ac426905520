package latency

import "time"

// Ms is d in fractional milliseconds, the unit hookline stores latency
// figures in (histogram sums, percentiles) and shows them in.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMs is the duration of ms milliseconds, as stored.
func FromMs(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
