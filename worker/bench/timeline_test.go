package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// v7 makes a UUIDv7 as uuid.NewV7 lays it out, for a given time.
func v7(t time.Time) uuid.UUID {
	var id uuid.UUID
	ms := uint64(t.UnixMilli())
	frac := uint64(t.Sub(time.UnixMilli(t.UnixMilli()))) >> 8
	binary.BigEndian.PutUint64(id[:8], ms<<16|7<<12|frac)
	id[8] = 0x80
	return id
}

func TestV7Time(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 123_456_789, time.UTC)
	got, ok := v7Time(v7(at))
	if !ok || got.Sub(at) > 0 || at.Sub(got) >= 256*time.Nanosecond {
		t.Fatalf("v7Time = %v, %v; want %v to within 256 ns", got, ok, at)
	}
	// An id made by the library that ingest uses reads as the time it
	// was made.
	before := time.Now()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got, ok = v7Time(id)
	if !ok || got.Before(before.Truncate(time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
		t.Fatalf("v7Time(NewV7()) = %v, made between %v and %v", got, before, after)
	}
	if _, ok := v7Time(uuid.New()); ok {
		t.Fatal("a version 4 id has no time")
	}
}

func TestTimelineSeconds(t *testing.T) {
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var tl timeline
	tl.add(v7(start).String(), start.Add(time.Second)) // before begin: not counted
	tl.begin(start)
	// Second 0: 99 arrivals 2 ms after their event, one 50 ms after.
	for i := range 100 {
		created := start.Add(time.Duration(i) * 5 * time.Millisecond)
		wait := 2 * time.Millisecond
		if i == 99 {
			wait = 50 * time.Millisecond
		}
		tl.add(v7(created).String(), created.Add(wait))
	}
	// Second 2: one arrival 10 ms after its event; second 1 has none.
	tl.add(v7(start.Add(2*time.Second)).String(), start.Add(2*time.Second+10*time.Millisecond))
	tl.add("not-a-uuid", start.Add(time.Second))
	tl.add(v7(start).String(), start.Add(-time.Millisecond)) // before the start
	var out bytes.Buffer
	if err := tl.write(&out); err != nil {
		t.Fatal(err)
	}
	// Quantiles come from the latency package's buckets (2 % wide).
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 5 || lines[2] != "1,0,,," || lines[3] != "2,1,10.00,10.00,10.00" {
		t.Fatalf("timeline:\n%s", out.String())
	}
	var sec, n int
	var p50, p99, most float64
	if k, err := fmt.Sscanf(lines[1], "%d,%d,%g,%g,%g", &sec, &n, &p50, &p99, &most); k != 5 || err != nil ||
		sec != 0 || n != 100 || math.Abs(p50-2) > 0.04 || p99 < 1.96 || p99 >= 50 || most != 50 {
		t.Fatalf("second 0: %q", lines[1])
	}
	if n := checkTimeline(t, out.String()); n != 101 {
		t.Fatalf("checkTimeline counted %d", n)
	}
}

// TestTimelineMedianP99: an interval's typical second, not its worst:
// the median of its seconds' p99s, seconds without arrivals left out.
func TestTimelineMedianP99(t *testing.T) {
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var tl timeline
	tl.begin(start)
	// Seconds 0-4: every arrival in second s waits waits[s]; second 2
	// has none, and second 4 is one slow second.
	waits := []time.Duration{4 * time.Millisecond, 6 * time.Millisecond, 0, 5 * time.Millisecond, 900 * time.Millisecond}
	for s, wait := range waits {
		if wait == 0 {
			continue
		}
		for i := range 10 {
			at := start.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Millisecond + wait)
			tl.add(v7(at.Add(-wait)).String(), at)
		}
	}
	near := func(got, want time.Duration) bool { return math.Abs(float64(got-want)) <= 0.03*float64(want) }
	if got := tl.medianP99(0, 5); !near(got, 6*time.Millisecond) {
		t.Fatalf("median of the p99s of 4, 6, 5 and 900 ms: %v, want the upper middle, 6 ms", got)
	}
	if got := tl.medianP99(0, 2); !near(got, 6*time.Millisecond) {
		t.Fatalf("seconds 0-1: %v", got)
	}
	if got := tl.medianP99(2, 3); got != 0 {
		t.Fatalf("a second without arrivals: %v, want 0", got)
	}
	if got := tl.medianP99(3, 60); !near(got, 900*time.Millisecond) {
		t.Fatalf("seconds 3 on, past the timeline's end: %v", got)
	}
}

// TestTimelineQuantile: an interval's p99 over all its arrivals together,
// which its slowest second sets when that second holds more than 1 % of
// them.
func TestTimelineQuantile(t *testing.T) {
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var tl timeline
	tl.begin(start)
	// Seconds 0-2: 100 arrivals each waiting 4 ms; second 3: 10 waiting
	// 900 ms, 3 % of the 310.
	for s, n := range []int{100, 100, 100, 10} {
		wait := 4 * time.Millisecond
		if s == 3 {
			wait = 900 * time.Millisecond
		}
		for i := range n {
			at := start.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Millisecond + wait)
			tl.add(v7(at.Add(-wait)).String(), at)
		}
	}
	near := func(got, want time.Duration) bool { return math.Abs(float64(got-want)) <= 0.03*float64(want) }
	if got := tl.quantile(0, 4, 0.99); !near(got, 900*time.Millisecond) {
		t.Fatalf("p99 of seconds 0-3: %v, want the slow second's 900 ms", got)
	}
	if got := tl.quantile(0, 3, 0.99); !near(got, 4*time.Millisecond) {
		t.Fatalf("p99 of seconds 0-2: %v, want 4 ms", got)
	}
	if got := tl.quantile(4, 60, 0.99); got != 0 {
		t.Fatalf("past the timeline's end: %v, want 0", got)
	}
}
