package latency_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

func ExampleHistogram() {
	// One endpoint's minute: 100 attempts from 10 ms to 1 s, every tenth failed.
	var h latency.Histogram
	for i := 1; i <= 100; i++ {
		h.Observe(time.Duration(i)*10*time.Millisecond, i%10 != 0)
	}
	p95 := h.Quantile(0.95)
	fmt.Println("attempts:", h.Count(), "failed:", h.Fail())
	fmt.Println("p50:", h.Quantile(0.50).Round(time.Millisecond)) // percentile_cont: 505ms
	fmt.Println("p95:", p95.Round(time.Millisecond))              // percentile_cont: 950.5ms
	fmt.Println("p99:", h.Quantile(0.99).Round(time.Millisecond)) // percentile_cont: 990.1ms
	fmt.Println("max:", h.Max())
	fmt.Println("flag:", latency.FlagFor(p95, h.Count(), latency.MinSamples))
	// Output:
	// attempts: 100 failed: 10
	// p50: 509ms
	// p95: 951ms
	// p99: 988ms
	// max: 1s
	// flag: ok
}

func ExampleRecorder() {
	rec := latency.NewRecorder()
	minute := time.Date(2026, 3, 14, 15, 9, 0, 0, time.UTC)

	// Senders record every attempt; its start time picks the minute slot.
	rec.Observe(42, minute.Add(5*time.Second), 180*time.Millisecond, true)
	rec.Observe(42, minute.Add(50*time.Second), 2400*time.Millisecond, false)
	rec.Observe(42, minute.Add(70*time.Second), 210*time.Millisecond, true)

	// The flusher drains, merges each slot into its stored row and, if the
	// transaction rolls back, calls rec.Restore(slots) to try again later.
	slots := rec.Drain()
	keys := slices.SortedFunc(maps.Keys(slots), func(a, b latency.Key) int { return a.Minute.Compare(b.Minute) })
	for _, k := range keys {
		h := slots[k]
		row, err := h.MarshalBinary()
		if err != nil {
			panic(err)
		}
		fmt.Printf("endpoint %d at %s: %d attempts, %d failed, max %v, %d bytes\n",
			k.EndpointID, k.Minute.Format("15:04"), h.Count(), h.Fail(), h.Max(), len(row))
	}
	// Output:
	// endpoint 42 at 15:09: 2 attempts, 1 failed, max 2.4s, 23 bytes
	// endpoint 42 at 15:10: 1 attempts, 0 failed, max 210ms, 18 bytes
}

func ExampleSeries() {
	end := time.Date(2026, 3, 14, 16, 0, 0, 0, time.UTC)
	minutes := map[time.Time]*latency.Histogram{}
	for m := 1; m <= 30; m++ {
		if m > 10 && m <= 20 {
			continue // no traffic in the middle ten minutes
		}
		h := new(latency.Histogram)
		for i := range 20 {
			h.Observe(time.Duration(100+10*m+i)*time.Millisecond, true)
		}
		minutes[end.Add(-time.Duration(m)*time.Minute)] = h
	}
	// Three ten-minute points for a sparkline, oldest first.
	for _, p := range latency.Series(minutes, end, 10*time.Minute, 3) {
		fmt.Println(p.Start.Format("15:04"), p.Count, p.P50.Round(time.Millisecond), p.P99.Round(time.Millisecond))
	}
	// Output:
	// 15:30 200 367ms 413ms
	// 15:40 0 0s 0s
	// 15:50 200 165ms 215ms
}
