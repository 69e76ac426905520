package latency

import "time"

// Flag classifies an endpoint's P95 for the dashboard and the breaker
// (DESIGN §6, §7).
type Flag string

// The flags, from healthy to worst.
const (
	FlagOK       Flag = "ok"
	FlagSlow     Flag = "slow"     // warn the operator
	FlagCritical Flag = "critical" // also lowers the breaker threshold
)

// Thresholds from DESIGN §7. Both are strict: a P95 of exactly 2 s is not
// slow. A slow endpoint is flagged before it fails because rising latency
// precedes timeouts; a critical one holds a worker for most of its timeout
// on every attempt, so the breaker should trip sooner.
const (
	SlowP95     = 2 * time.Second
	CriticalP95 = 5 * time.Second
)

// MinSamples is the evidence DESIGN §6 requires before a P95 may lower the
// breaker threshold. It is the usual minSamples for FlagFor.
const MinSamples = 20

// FlagFor classifies p95 measured over samples attempts. With fewer than
// minSamples attempts it returns FlagOK: two slow probes of a quiet endpoint
// are not evidence.
func FlagFor(p95 time.Duration, samples, minSamples int64) Flag {
	switch {
	case samples < minSamples:
		return FlagOK
	case p95 > CriticalP95:
		return FlagCritical
	case p95 > SlowP95:
		return FlagSlow
	default:
		return FlagOK
	}
}
