package backoff

import (
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		now    time.Time
		want   time.Duration
		wantOK bool
	}{
		{name: "absent", value: "", want: 0, wantOK: false},
		{name: "blank", value: "   ", want: 0, wantOK: false},
		{name: "delta seconds", value: "120", want: 2 * time.Minute, wantOK: true},
		{name: "delta seconds with surrounding space", value: " 120 ", want: 2 * time.Minute, wantOK: true},
		{name: "zero seconds means now", value: "0", want: 0, wantOK: true},
		{name: "leading zeros", value: "007", want: 7 * time.Second, wantOK: true},
		{name: "negative seconds are malformed", value: "-5", wantOK: false},
		{name: "signed seconds are malformed", value: "+5", wantOK: false},
		{name: "fractional seconds are malformed", value: "1.5", wantOK: false},
		{name: "words are malformed", value: "soon", wantOK: false},
		{name: "huge seconds saturate", value: "99999999999999999999999", want: maxDuration, wantOK: true},
		{name: "IMF-fixdate in the future", value: "Sat, 14 Mar 2026 12:01:30 GMT", want: 90 * time.Second, wantOK: true},
		{name: "RFC 850 date", value: "Saturday, 14-Mar-26 12:01:30 GMT", want: 90 * time.Second, wantOK: true},
		{name: "asctime date", value: "Sat Mar 14 12:01:30 2026", want: 90 * time.Second, wantOK: true},
		{name: "asctime date with a padded day", value: "Wed Apr  1 12:00:00 2026", want: 18 * 24 * time.Hour, wantOK: true},
		{name: "date in the past clamps to zero", value: "Sat, 14 Mar 2026 11:59:00 GMT", want: 0, wantOK: true},
		{name: "date equal to now is zero", value: "Sat, 14 Mar 2026 12:00:00 GMT", want: 0, wantOK: true},
		{
			name:   "date is relative to a sub-second now",
			value:  "Sat, 14 Mar 2026 12:00:10 GMT",
			now:    now.Add(500 * time.Millisecond),
			want:   9500 * time.Millisecond,
			wantOK: true,
		},
		{
			name:   "now in another zone is the same instant",
			value:  "Sat, 14 Mar 2026 12:01:00 GMT",
			now:    now.In(time.FixedZone("BRT", -3*3600)),
			want:   time.Minute,
			wantOK: true,
		},
		{name: "non-GMT zone is malformed", value: "Sat, 14 Mar 2026 12:01:30 PST", wantOK: false},
		{name: "ISO 8601 is malformed", value: "2026-03-14T12:01:30Z", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			if !tt.now.IsZero() {
				at = tt.now
			}
			got, ok := ParseRetryAfter(tt.value, at)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("ParseRetryAfter(%q) = %s, %t, want %s, %t", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
