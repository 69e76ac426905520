package bench

import (
	"testing"
	"time"
)

// TestDiskstats: the WAL device's writes and flushes are read from their
// columns of /proc/diskstats, and an interval's means from two samples.
func TestDiskstats(t *testing.T) {
	const before = `  253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 496305 41125 18563778 247399 6621069 329249 348859488 2417858 0 884196 3169898 179026 9 115634072 62254 2106158 442385
 254       1 vda1 1 2 3 4 5 6 7 8 0 9 10 11 12 13 14 15 16
`
	const after = ` 254       0 vda 496305 41125 18563778 247399 6631069 329249 348859488 2421858 0 884196 3169898 179026 9 115634072 62254 2108158 443385
`
	a, b := parseDiskstats(before, "254:0"), parseDiskstats(after, "254:0")
	if !a.ok || a.writes != 6621069 || a.writeTime != 2417858 || a.flushes != 2106158 || a.flushTime != 442385 {
		t.Fatalf("vda: %+v", a)
	}
	if got := parseDiskstats(before, "254:1"); !got.ok || got.writes != 5 || got.flushTime != 16 {
		t.Fatalf("vda1: %+v", got)
	}
	if got := parseDiskstats(before, "8:0"); got.ok {
		t.Fatalf("a device not listed: %+v", got)
	}
	// 10,000 writes in 4,000 ms, 2,000 flushes in 1,000 ms.
	if w, f := b.since(a); w != 400*time.Microsecond || f != 500*time.Microsecond {
		t.Fatalf("write %v, flush %v; want 400µs and 500µs", w, f)
	}
	if w, f := a.since(diskSample{}); w != 0 || f != 0 {
		t.Fatalf("against a failed sample: %v, %v", w, f)
	}
}
