package components

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Dash stands in for a missing value.
const Dash = "—"

// Ms formats a latency in milliseconds with about three significant digits:
// "0.8 ms", "38 ms", "1.24 s", "15.0 s", "2.5 min". NaN and negative values
// are missing data and render as Dash.
func Ms(ms float64) string {
	switch {
	case math.IsNaN(ms) || ms < 0:
		return Dash
	case ms == 0:
		return "0 ms"
	case ms < 0.05:
		return "< 0.1 ms"
	}
	// Each branch checks the rounded value, so 999.7 ms reads "1.00 s"
	// rather than "1000 ms".
	if r := math.Round(ms*10) / 10; r < 10 {
		return strconv.FormatFloat(r, 'f', 1, 64) + " ms"
	}
	if r := math.Round(ms); r < 1000 {
		return strconv.FormatFloat(r, 'f', 0, 64) + " ms"
	}
	s := ms / 1000
	if r := math.Round(s*100) / 100; r < 10 {
		return strconv.FormatFloat(r, 'f', 2, 64) + " s"
	}
	if r := math.Round(s*10) / 10; r < 60 {
		return strconv.FormatFloat(r, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(s/60, 'f', 1, 64) + " min"
}

// MsPtr is Ms for an optional latency; nil renders as Dash.
func MsPtr(ms *float64) string {
	if ms == nil {
		return Dash
	}
	return Ms(*ms)
}

// Ago says how long before now t was: "just now", "12 s ago", "3 min ago",
// "2 h ago", "4 d ago". Units are truncated, never rounded up. A zero t is
// missing and renders as Dash; a t in the future renders as Until does.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return Dash
	}
	d := now.Sub(t)
	if d < 0 {
		return Until(t, now)
	}
	if d < time.Second {
		return "just now"
	}
	return span(d) + " ago"
}

// Until says how long after now t is: "in 12 s", "in 3 min", "in 2 h",
// "in 4 d"; "now" when t is not in the future. A zero t renders as Dash.
func Until(t, now time.Time) string {
	if t.IsZero() {
		return Dash
	}
	d := t.Sub(now)
	if d < time.Second {
		return "now"
	}
	return "in " + span(d)
}

func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int64(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int64(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h", int64(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int64(d/(24*time.Hour)))
}

// Timestamp formats t for tooltips and logs in its own location:
// "2026-03-01 14:05:09 UTC". A zero t renders as Dash.
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return Dash
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// Counted is how far the endpoint tables count an endpoint's queue and
// dead letters: their queries read at most Counted + 1 rows an endpoint,
// whatever the backlog, and CountUpTo shows more as "1,000+". An
// endpoint's own page counts exactly.
const Counted = 1000

// CountUpTo formats a count read up to Counted + 1: as Count, or
// "1,000+" past Counted.
func CountUpTo(n int64) string {
	if n > Counted {
		return Count(Counted) + "+"
	}
	return Count(n)
}

// Count formats n with thousands separators: "12,408".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Percent formats a ratio (0.992, not 99.2) as "99.2 %". A ratio that is not
// exactly 1 never reads "100.0 %", and one that is not exactly 0 never reads
// "0.0 %": an operator looking at a success rate must be able to tell "no
// failures" from "a few". NaN (no samples) renders as Dash.
func Percent(ratio float64) string {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return Dash
	}
	p := ratio * 100
	r := math.Round(p*10) / 10
	switch {
	case r >= 100 && ratio < 1:
		return "> 99.9 %"
	case r <= 0 && ratio > 0:
		return "< 0.1 %"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + " %"
}

// Bytes formats a size in binary units: "512 B", "1.5 KiB", "256 KiB",
// "3.2 MiB".
func Bytes(n int64) string {
	if n < 0 {
		return Dash
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	for _, u := range units {
		v /= 1024
		if r := math.Round(v*10) / 10; r < 10 {
			return strconv.FormatFloat(r, 'f', 1, 64) + " " + u
		}
		if r := math.Round(v); r < 1024 || u == units[len(units)-1] {
			return strconv.FormatFloat(r, 'f', 0, 64) + " " + u
		}
	}
	return Dash
}
