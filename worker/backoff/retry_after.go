package backoff

import (
	"strings"
	"time"
)

// The three HTTP-date forms RFC 9110 §5.6.7 obliges a recipient to accept:
// IMF-fixdate (what every current server sends), then the obsolete RFC 850
// and asctime forms. They are spelled out here rather than borrowed from
// net/http so this leaf package stays free of the HTTP stack.
const (
	imfFixdate = "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date = "Monday, 02-Jan-06 15:04:05 GMT"
	asctime    = time.ANSIC
)

// ParseRetryAfter reads an HTTP Retry-After header value: either
// delta-seconds ("120") or an HTTP-date, which is taken relative to now.
// It reports false for an absent or malformed value, so the caller falls
// back to plain backoff. A date in the past means "retry now" and yields
// 0, true. The result is not capped; Next applies RetryAfterCap.
//
// Only the RFC grammar is accepted: fractions ("1.5") and signs ("-1",
// "+5") are malformed, because guessing at a partner's intent could park
// deliveries for the wrong length of time.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseDeltaSeconds(v), true
	}
	for _, layout := range [...]string{imfFixdate, rfc850Date, asctime} {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		// The layouts carry no zone but GMT, so t is UTC; Sub works on
		// instants, so now's location does not matter.
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// parseDeltaSeconds converts a string of ASCII digits to a duration,
// saturating instead of failing: a partner asking for "99999999999999999999"
// seconds asked for a very long time, and RetryAfterCap trims it to an hour.
func parseDeltaSeconds(v string) time.Duration {
	const maxSeconds = int64(maxDuration / time.Second)
	var s int64
	for i := 0; i < len(v); i++ {
		s = s*10 + int64(v[i]-'0')
		if s > maxSeconds {
			return maxDuration
		}
	}
	return time.Duration(s) * time.Second
}

func isDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}
