// Package budget owns an endpoint's failure budget: how many consecutive
// failed deliveries (a delivery that died or was given up, not an attempt)
// spanning how long disable the endpoint, the warnings sent on the way
// (50, 70 and 90 %), and how progress reads ("7 of 10 failures in 41 h").
//
// Like the breaker, the streak lives in PostgreSQL (endpoint_health) and
// this package only computes transitions, as pure functions of the streak,
// the outcome and the time; the worker applies them under the health row's
// lock in the completion transaction.
package budget

import (
	"errors"
	"fmt"
	"time"
)

// Warning levels, percent of the budget's failure count, in order.
var Levels = []int{50, 70, 90}

// Budget is one endpoint's setting. Failures 0 turns auto-disable off (and
// with it the warnings).
type Budget struct {
	Failures int           // consecutive failed deliveries
	Span     time.Duration // the failures must span at least this long
}

// Limits of the settings (the database checks the same).
const (
	MaxFailures = 10000
	MaxHours    = 8760
)

// New validates and builds a Budget from the endpoint's columns.
func New(failures, hours int) (Budget, error) {
	if failures < 0 || failures > MaxFailures {
		return Budget{}, fmt.Errorf("failures must be between 0 and %d", MaxFailures)
	}
	if hours < 0 || hours > MaxHours {
		return Budget{}, errors.New("hours must be between 0 and 8760")
	}
	return Budget{Failures: failures, Span: time.Duration(hours) * time.Hour}, nil
}

// Off reports whether auto-disable is turned off.
func (b Budget) Off() bool { return b.Failures <= 0 }

// Streak is the current run of failed deliveries.
type Streak struct {
	Failures int
	FirstAt  time.Time // the first failure of the streak; zero when none
	Warned   int       // the highest warning level sent in this streak
}

// Verdict is what one failed delivery means.
type Verdict struct {
	Streak  Streak
	Warn    int  // a warning level to send now (0: none)
	Disable bool // the budget is spent: disable the endpoint
}

// Fail records one failed delivery at t. The endpoint is disabled once the
// count is reached and the first failure is at least Span old; short of
// that, the highest warning level newly crossed is sent (once per streak;
// a level skipped by a jump is not sent on its own).
func (b Budget) Fail(s Streak, t time.Time) Verdict {
	if s.Failures == 0 || s.FirstAt.IsZero() {
		s.FirstAt = t
	}
	s.Failures++
	v := Verdict{Streak: s}
	if b.Off() {
		return v
	}
	if s.Failures >= b.Failures && t.Sub(s.FirstAt) >= b.Span {
		v.Disable = true
		return v
	}
	pct := s.Failures * 100 / b.Failures
	for _, l := range Levels {
		if pct >= l && l > v.Streak.Warned {
			v.Warn = l
		}
	}
	if v.Warn > 0 {
		v.Streak.Warned = v.Warn
	}
	return v
}

// Succeed is a delivered delivery: the streak starts again.
func (b Budget) Succeed(Streak) Streak { return Streak{} }

// Percent is how much of the budget the streak has used (0 when off).
func (b Budget) Percent(s Streak) int {
	if b.Off() {
		return 0
	}
	return min(s.Failures*100/b.Failures, 100)
}

// Progress says where the streak stands, for the endpoints table and the
// endpoint page: "7 of 10 failures in 41 h", "" when there is no streak,
// "auto-disable off" when the budget is off.
func (b Budget) Progress(s Streak, now time.Time) string {
	if b.Off() {
		if s.Failures == 0 {
			return ""
		}
		return fmt.Sprintf("%d failed in a row (auto-disable off)", s.Failures)
	}
	if s.Failures == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d failures in %s", s.Failures, b.Failures, Span(now.Sub(s.FirstAt)))
}

// Span renders a duration the way progress does: minutes under an hour,
// hours under four days, then days.
func Span(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(max(d, 0)/time.Minute))
	case d < 96*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}
