package bench

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cpuSample is the CPU time (user + system) used so far by this process
// and, when known, by the PostgreSQL cluster's processes. CPU time per
// delivery tells where the cost is; throughput alone only tells that there
// is one, and it moves with whatever else the machine runs.
type cpuSample struct {
	self time.Duration
	db   time.Duration
	dbOK bool
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat times. It is
// 100 on every architecture Go supports on Linux; reading it properly
// (sysconf) needs cgo.
const clockTicks = 100

// sampleCPU reads the CPU clocks. postmaster is the cluster's postmaster
// pid, or 0 when the database is elsewhere; its children (backends, WAL
// writer, checkpointer, ...) are included. A backend that exits between
// two samples takes its time with it; the bench's pool keeps its
// connections for the whole phase.
func sampleCPU(postmaster int) cpuSample {
	var s cpuSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if postmaster <= 0 {
		return s
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range stats {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, t, ok := procTimes(path)
		if ok && (pid == postmaster || ppid == postmaster) {
			ticks += t
			s.dbOK = true
		}
	}
	s.db = time.Duration(ticks) * time.Second / clockTicks
	return s
}

// procTimes parses the parent pid and utime+stime of /proc/<pid>/stat.
func procTimes(path string) (ppid int, ticks int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may contain spaces;
	// the fields after its closing parenthesis start at field 3 (state).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])               // field 4
	utime, err2 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err3 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, utime + stime, true
}

// perItem is the CPU time between two samples per item processed.
func perItem(before, after time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return (after - before) / time.Duration(n)
}

// machineSample is the machine's CPU time from /proc/stat's first line, in
// clock ticks: all of it, and the idle part (idle and iowait).
type machineSample struct {
	total, idle int64
	ok          bool
}

func sampleMachine() machineSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSample{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return machineSample{}
	}
	var m machineSample
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return machineSample{}
		}
		// user nice system idle iowait irq softirq steal; guest and
		// guest_nice (9 and 10) are already counted in user and nice.
		if i < 8 {
			m.total += n
		}
		if i == 3 || i == 4 {
			m.idle += n
		}
	}
	m.ok = true
	return m
}

// busySince is the share of the machine's CPU time that was not idle
// since before (0 when either sample failed).
func (m machineSample) busySince(before machineSample) float64 {
	if !m.ok || !before.ok || m.total <= before.total {
		return 0
	}
	return 1 - float64(m.idle-before.idle)/float64(m.total-before.total)
}

// refWork is the buffer machineSpeed hashes: larger than the caches'
// share a core has, so that the work goes slower both when the core does
// and when the memory behind it is contended. Made on first use, not in
// every command of the binary; a soak uses it first before its window
// opens (startSoakSampler), so that every interval's RSS holds it.
var refWork = sync.OnceValue(func() []byte { return make([]byte, 4<<20) })

// machineSpeed is the CPU time this thread takes for refWork, the best of
// three. hookline's CPU per request can rise because hookline does more
// per request or because the machine, shared with others, runs the same
// work slower; a fixed piece of work that takes longer tells the second.
// CPU time, not wall time: the wall time of a busy machine's work includes
// waiting for a core.
func machineSpeed() time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(0)
	for range 3 {
		var a, b unix.Timespec
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a) != nil {
			return 0
		}
		sum := sha256.Sum256(refWork())
		refSink ^= sum[0]
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b) != nil {
			return 0
		}
		if d := time.Duration(b.Nano() - a.Nano()); best == 0 || d < best {
			best = d
		}
	}
	return best
}

// refSink keeps the compiler from dropping refWork's hash.
var refSink byte

// fixedWork is the work probeMachine times: SHA-256 of a 32 KiB buffer,
// eight times over (about 0.17 ms on this project's machine). The buffer
// stays in the core's own caches, so that what other cores do to the
// memory does not slow it: only the core itself running slower, or less
// of the time, does. It returns a byte of the hashes, for its caller to
// keep.
func fixedWork(buf []byte) byte {
	var b byte
	for range 8 {
		sum := sha256.Sum256(buf)
		b ^= sum[0]
	}
	return b
}
