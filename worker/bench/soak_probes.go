package bench

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schedHistogram is the Go runtime's histogram of the time goroutines
// waited, runnable, to run, counted since the process started.
type schedHistogram struct {
	counts  []uint64
	buckets []float64 // seconds; len(counts)+1 boundaries
}

func schedLatencies() schedHistogram {
	sample := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return schedHistogram{}
	}
	h := sample[0].Value.Float64Histogram()
	return schedHistogram{counts: slices.Clone(h.Counts), buckets: h.Buckets}
}

// p99Since is the p99 of the waits counted since prev: the upper bound of
// the bucket it falls in (the lower one for the last, unbounded, bucket);
// 0 when none were counted or the histograms differ in shape.
func (h schedHistogram) p99Since(prev schedHistogram) time.Duration {
	if len(h.counts) == 0 || len(prev.counts) != len(h.counts) {
		return 0
	}
	var total uint64
	for i := range h.counts {
		total += h.counts[i] - prev.counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := total - total/100 // the count at or below the p99
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i] - prev.counts[i]
		if seen >= rank {
			b := h.buckets[i+1]
			if math.IsInf(b, 1) {
				b = h.buckets[i]
			}
			return time.Duration(b * float64(time.Second))
		}
	}
	return 0
}

// goMemory reads the Go heap's objects and all the memory the runtime
// holds and has not returned to the OS (runtime/metrics, no stop of the
// world).
func goMemory() (heap, held int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	v := func(i int) int64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(samples[i].Value.Uint64())
	}
	return v(0), v(1) - v(2)
}

// rss is this process's resident memory in bytes (Linux), 0 when unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// probeEvery is how often probeCommits commits: 1,200 round trips a
// minute, so a minute's p99 is its 12 slowest, at a cost of a few
// thousandths of the soak's commits. probeMachine runs its fixed work
// as often: about 0.2 ms of a core at real-time priority every 50 ms.
const probeEvery = 50 * time.Millisecond

// probeCommits times, every probeEvery from the warm-up on, a transaction
// that does nothing but commit durably (txid_current gives it a
// transaction id, so its commit writes a record and waits for the WAL's
// flush), on a connection of its own. Its work is the same in every
// interval, and it has the deliveries' waits: for a core, for PostgreSQL's
// backend to run, for the WAL's flush and the fsync's disk. When the
// deliveries' p99 rises from one interval to the next and the probe's
// rises with it, the interval was slower for any work on this machine;
// when the probe's stays level, the rise is hookline's own. A probe that
// fails is not counted; after its connection breaks it counts nothing.
func (s *soakSampler) probeCommits(ctx context.Context, pool *pgxpool.Pool) {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s.ticks(ctx, probeEvery, func() {
		if conn.IsClosed() {
			return
		}
		began := time.Now()
		var xid int64
		if err := conn.QueryRow(ctx, "SELECT txid_current()").Scan(&xid); err != nil {
			return
		}
		took := time.Since(began)
		if at := began.Sub(s.start); at >= 0 {
			s.mu.Lock()
			observeIn(s.commits, int(at/s.every), took)
			s.mu.Unlock()
		}
	})
}

// probeMachine times fixedWork every probeEvery from the warm-up on, on a
// thread of its own at real-time priority (realtime), which no thread of
// normal priority can take the core from while it works. Its wall time
// rises only when the machine beneath runs it slower (or interrupts take
// more of its core): the hypervisor giving the virtual core to another
// guest, or another guest's work on the same physical core. This
// machine's kernel does not see either (/proc/stat's steal time stays
// 0), and counts the time lost as CPU time of whatever thread was
// running: hookline's CPU per request and PostgreSQL's rise with it,
// for the same work. Without the
// privilege the thread runs at normal priority, and its wall time
// includes its wait for a core too; the report says which.
//
// The thread stays locked to the goroutine, which ends with the soak:
// the runtime then ends the thread, and its priority goes with it.
func (s *soakSampler) probeMachine(ctx context.Context) {
	runtime.LockOSThread()
	rt := realtime() == nil
	s.mu.Lock()
	s.realtime = rt
	s.mu.Unlock()
	buf := make([]byte, 32<<10)
	var keep byte
	s.ticks(ctx, probeEvery, func() {
		began := time.Now()
		keep ^= fixedWork(buf)
		took := time.Since(began)
		if at := began.Sub(s.start); at >= 0 {
			s.mu.Lock()
			observeIn(s.work, int(at/s.every), took)
			s.mu.Unlock()
		}
	})
	buf[0] = keep
}

// floorTo rounds d down to a multiple of step (Truncate rounds toward
// zero).
func floorTo(d, step time.Duration) time.Duration {
	return d - ((d%step)+step)%step
}
