package latency_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

func TestFlagFor(t *testing.T) {
	tests := []struct {
		name    string
		p95     time.Duration
		samples int64
		want    latency.Flag
	}{
		{"fast endpoint is ok", 300 * ms, 100, latency.FlagOK},
		{"exactly 2 s is not slow", 2 * time.Second, 100, latency.FlagOK},
		{"just over 2 s is slow", 2*time.Second + time.Nanosecond, 100, latency.FlagSlow},
		{"exactly 5 s is slow, not critical", 5 * time.Second, 100, latency.FlagSlow},
		{"just over 5 s is critical", 5*time.Second + time.Nanosecond, 100, latency.FlagCritical},
		{"timing out at 15 s is critical", 15 * time.Second, 100, latency.FlagCritical},
		{"too few samples is ok however slow", 30 * time.Second, latency.MinSamples - 1, latency.FlagOK},
		{"exactly MinSamples is enough evidence", 30 * time.Second, latency.MinSamples, latency.FlagCritical},
		{"no samples is ok", 0, 0, latency.FlagOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := latency.FlagFor(tt.p95, tt.samples, latency.MinSamples); got != tt.want {
				t.Fatalf("FlagFor(%v, %d, %d) = %q, want %q", tt.p95, tt.samples, latency.MinSamples, got, tt.want)
			}
		})
	}
}
