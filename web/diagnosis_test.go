package web

import (
	"strings"
	"testing"
	"time"
)

func TestDiagnose(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		c    cluster
		want string
	}{
		{"410 disables", cluster{StatusCode: 410, Count: 1, MaxInOneHour: 1, HoursWithDead: 1}, "gone"},
		{"401 credentials", cluster{StatusCode: 401, Count: 50, MaxInOneHour: 50, HoursWithDead: 1}, "credentials"},
		{"403 credentials", cluster{StatusCode: 403, Count: 2, MaxInOneHour: 2, HoursWithDead: 1}, "credentials"},
		{"429 rate", cluster{StatusCode: 429, Count: 30, MaxInOneHour: 30, HoursWithDead: 1}, "rate_limited"},
		{"missing field", cluster{ErrorClass: "missing_field", Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "payload"},
		{"blocked", cluster{ErrorClass: "blocked_destination", Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "blocked"},
		{"tracker said duplicate", cluster{ErrorClass: "body_mismatch", StatusCode: 200, Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "rejected_by_tracker"},
		{"outage burst", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 50, MaxInOneHour: 48, HoursWithDead: 2}, "outage_burst"},
		{"burst of timeouts", cluster{ErrorClass: "timeout", Count: 25, MaxInOneHour: 25, HoursWithDead: 1}, "outage_burst"},
		{"trickle", cluster{ErrorClass: "timeout", Count: 6, MaxInOneHour: 1, HoursWithDead: 6, FirstDeadAt: t0, LastDeadAt: t0.Add(15 * time.Hour)}, "trickle"},
		{"19 in an hour is not a burst", cluster{ErrorClass: "connect", Count: 19, MaxInOneHour: 19, HoursWithDead: 1}, "failing"},
		{"spread but heavy is not a trickle", cluster{StatusCode: 500, Count: 40, MaxInOneHour: 10, HoursWithDead: 4}, "failing"},
		{"other 4xx", cluster{StatusCode: 422, Count: 2, MaxInOneHour: 2, HoursWithDead: 1}, "client_error"},
		{"tls, a burst included", cluster{ErrorClass: "tls", Count: 30, MaxInOneHour: 30, HoursWithDead: 1}, "tls"},
		{"proxy refused", cluster{ErrorClass: "proxy", Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "proxy"},
		{"token endpoint failing", cluster{ErrorClass: "oauth2_token", Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "token"},
		{"egress settings unreadable", cluster{ErrorClass: "egress_settings", Count: 3, MaxInOneHour: 3, HoursWithDead: 1}, "egress_settings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := diagnose(tc.c, 24)
			if d.Pattern != tc.want || d.Summary == "" || d.Action == "" {
				t.Fatalf("diagnose = %+v, want pattern %q", d, tc.want)
			}
		})
	}
}

// TestDiagnoseWording: counts are pluralised, and an endpoint without
// retries (max_attempts 1) is not said to have run out of them.
func TestDiagnoseWording(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		c         cluster
		want, not []string
	}{
		{"burst, one attempt each", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 30, MaxInOneHour: 30, HoursWithDead: 1, AvgAttempts: 1, maxAttempts: 1},
			[]string{"single attempt", "max_attempts 1"}, []string{"attempts each", "retry window"}},
		{"burst, one attempt each, with retries since", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 30, MaxInOneHour: 30, HoursWithDead: 1, AvgAttempts: 1, maxAttempts: 5},
			[]string{"(1 attempt each)"}, []string{"1 attempts"}},
		{"burst, five attempts each", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 30, MaxInOneHour: 30, HoursWithDead: 1, AvgAttempts: 5, maxAttempts: 5},
			[]string{"(5 attempts each)"}, nil},
		{"burst, averaged", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 30, MaxInOneHour: 30, HoursWithDead: 1, AvgAttempts: 4.5, maxAttempts: 5},
			[]string{"(4.5 attempts each on average)"}, nil},
		{"failing without retries", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 2, MaxInOneHour: 2, HoursWithDead: 1, AvgAttempts: 1, maxAttempts: 1},
			[]string{"HTTP 503", "only attempt"}, []string{"retries ran out"}},
		{"failing with retries", cluster{ErrorClass: "http_status", StatusCode: 503, Count: 2, MaxInOneHour: 2, HoursWithDead: 1, AvgAttempts: 5, maxAttempts: 5},
			[]string{"until the retries ran out"}, nil},
		{"trickle without retries", cluster{ErrorClass: "timeout", Count: 6, MaxInOneHour: 1, HoursWithDead: 6, FirstDeadAt: t0, LastDeadAt: t0.Add(15 * time.Hour), AvgAttempts: 1, maxAttempts: 1},
			[]string{"every failure is final", "spread over 15 hours"}, []string{"retries run out", "0m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := diagnose(tc.c, 24)
			for _, w := range tc.want {
				if !strings.Contains(d.Summary, w) {
					t.Errorf("summary %q lacks %q", d.Summary, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(d.Summary, n) {
					t.Errorf("summary %q says %q", d.Summary, n)
				}
			}
		})
	}
}
