package components_test

import (
	"math"
	"testing"
	"time"

	"github.com/hookline/hookline/views/components"
)

func TestMs(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0 ms"},
		{0.01, "< 0.1 ms"},
		{0.8, "0.8 ms"},
		{9.94, "9.9 ms"},
		{9.96, "10 ms"},
		{38, "38 ms"},
		{38.4, "38 ms"},
		{999.4, "999 ms"},
		{999.6, "1.00 s"},
		{1240, "1.24 s"},
		{3100, "3.10 s"},
		{9999, "10.0 s"},
		{15000, "15.0 s"},
		{59990, "1.0 min"},
		{150000, "2.5 min"},
		{-1, "—"},
		{math.NaN(), "—"},
	}
	for _, tt := range tests {
		if got := components.Ms(tt.ms); got != tt.want {
			t.Errorf("Ms(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func TestMsPtr(t *testing.T) {
	if got := components.MsPtr(nil); got != "—" {
		t.Errorf("MsPtr(nil) = %q, want —", got)
	}
	v := 38.0
	if got := components.MsPtr(&v); got != "38 ms" {
		t.Errorf("MsPtr(38) = %q, want 38 ms", got)
	}
}

func TestAgoAndUntil(t *testing.T) {
	now := time.Date(2026, 3, 14, 14, 42, 0, 0, time.UTC)
	ago := []struct {
		d    time.Duration
		want string
	}{
		{0, "just now"},
		{900 * time.Millisecond, "just now"},
		{12 * time.Second, "12 s ago"},
		{59 * time.Second, "59 s ago"},
		{60 * time.Second, "1 min ago"},
		{3*time.Minute + 59*time.Second, "3 min ago"},
		{2*time.Hour + 10*time.Minute, "2 h ago"},
		{23*time.Hour + 59*time.Minute, "23 h ago"},
		{4*24*time.Hour + time.Hour, "4 d ago"},
		{-3 * time.Minute, "in 3 min"},
	}
	for _, tt := range ago {
		if got := components.Ago(now.Add(-tt.d), now); got != tt.want {
			t.Errorf("Ago(now-%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	until := []struct {
		d    time.Duration
		want string
	}{
		{-time.Minute, "now"},
		{0, "now"},
		{12 * time.Second, "in 12 s"},
		{3*time.Minute + 10*time.Second, "in 3 min"},
		{2 * time.Hour, "in 2 h"},
		{4 * 24 * time.Hour, "in 4 d"},
	}
	for _, tt := range until {
		if got := components.Until(now.Add(tt.d), now); got != tt.want {
			t.Errorf("Until(now+%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := components.Ago(time.Time{}, now); got != "—" {
		t.Errorf("Ago(zero) = %q, want —", got)
	}
	if got := components.Until(time.Time{}, now); got != "—" {
		t.Errorf("Until(zero) = %q, want —", got)
	}
}

func TestTimestamp(t *testing.T) {
	got := components.Timestamp(time.Date(2026, 3, 1, 14, 5, 9, 0, time.UTC))
	if got != "2026-03-01 14:05:09 UTC" {
		t.Errorf("Timestamp = %q", got)
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{1000, "1,000"},
		{12408, "12,408"},
		{1843221, "1,843,221"},
		{-1234, "-1,234"},
		{math.MaxInt64, "9,223,372,036,854,775,807"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		if got := components.Count(tt.n); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		name  string
		ratio float64
		want  string
	}{
		{"typical", 0.992, "99.2 %"},
		{"all", 1, "100.0 %"},
		{"none", 0, "0.0 %"},
		{"almost all never reads 100", 0.99996, "> 99.9 %"},
		{"a few never reads 0", 0.0004, "< 0.1 %"},
		{"half", 0.5, "50.0 %"},
		{"no samples", math.NaN(), "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := components.Percent(tt.ratio); got != tt.want {
				t.Errorf("Percent(%v) = %q, want %q", tt.ratio, got, tt.want)
			}
		})
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{256 * 1024, "256 KiB"},
		{1024*1024 - 1, "1.0 MiB"},
		{3355443, "3.2 MiB"},
		{-1, "—"},
	}
	for _, tt := range tests {
		if got := components.Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestFragmentID(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"endpoint-row", "42"}, "endpoint-row-42"},
		{[]string{"Endpoint Row", "0190c1c2-7f3a"}, "endpoint-row-0190c1c2-7f3a"},
		{[]string{"cluster", "api.example.com/hooks", "503"}, "cluster-api-example-com-hooks-503"},
		{[]string{"42"}, "id-42"},
		{[]string{""}, "id"},
		{[]string{"a", "", "b"}, "a-b"},
		{[]string{"tile", "dead letters!"}, "tile-dead-letters"},
	}
	for _, tt := range tests {
		if got := components.FragmentID(tt.parts...); got != tt.want {
			t.Errorf("FragmentID(%q) = %q, want %q", tt.parts, got, tt.want)
		}
	}
	if got := components.Target("endpoint-row-42"); got != "#endpoint-row-42" {
		t.Errorf("Target = %q", got)
	}
}
