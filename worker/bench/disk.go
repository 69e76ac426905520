package bench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// diskSample is the counters of the block device that holds the
// cluster's WAL, from /proc/diskstats: the writes and cache flushes it
// completed and the time they took, from the request's submission to its
// completion. A commit waits for the WAL's flush, and on a virtual disk
// that time includes whatever else the host's storage is doing.
type diskSample struct {
	writes, writeTime, flushes, flushTime int64 // time in milliseconds
	ok                                    bool
}

// walDisk is the "major:minor" of the device holding the WAL of the
// cluster whose postmaster has the pid postmaster (its working directory
// is its data directory), or "" when that is not known: a database
// elsewhere, or not Linux (walDevice).
func walDisk(postmaster int) string {
	if postmaster <= 0 {
		return ""
	}
	return walDevice("/proc/" + strconv.Itoa(postmaster) + "/cwd/pg_wal")
}

// sampleDisk reads dev's line of /proc/diskstats (fields as in the
// kernel's Documentation/admin-guide/iostats.rst; the flush counters
// came in Linux 5.5).
func sampleDisk(dev string) diskSample {
	if dev == "" {
		return diskSample{}
	}
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return diskSample{}
	}
	return parseDiskstats(string(b), dev)
}

// parseDiskstats reads dev's line of a /proc/diskstats.
func parseDiskstats(b, dev string) diskSample {
	var err error
	major, minor, _ := strings.Cut(dev, ":")
	for line := range strings.Lines(b) {
		f := strings.Fields(line)
		if len(f) < 20 || f[0] != major || f[1] != minor {
			continue
		}
		var n [4]int64
		for i, col := range []int{7, 10, 18, 19} {
			if n[i], err = strconv.ParseInt(f[col], 10, 64); err != nil {
				return diskSample{}
			}
		}
		return diskSample{writes: n[0], writeTime: n[1], flushes: n[2], flushTime: n[3], ok: true}
	}
	return diskSample{}
}

// since is the mean time of a write and of a flush completed since
// before (0 when none was, or a sample failed).
func (d diskSample) since(before diskSample) (write, flush time.Duration) {
	if !d.ok || !before.ok {
		return 0, 0
	}
	mean := func(ms, n int64) time.Duration {
		if n <= 0 {
			return 0
		}
		return time.Duration(ms) * time.Millisecond / time.Duration(n)
	}
	return mean(d.writeTime-before.writeTime, d.writes-before.writes), mean(d.flushTime-before.flushTime, d.flushes-before.flushes)
}
