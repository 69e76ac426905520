package bench

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/latency"
)

// A soak is a steady-rate run long enough to show drift: it reports, for
// every interval of the window, the deliveries sent, the enqueue-to-attempt
// percentiles of the events created in it, the size of the tables that grow
// with traffic (with their indexes and TOAST), and this process's resident
// memory. A healthy soak is flat: the last interval's throughput and p99
// within 10 % of the first's, table sizes growing by what the traffic adds
// and no more, RSS level.

// sizeOfTable is a table's size with its indexes and TOAST; a partitioned
// table's is the sum of its partitions' (pg_partition_tree has no rows for
// a table that is not partitioned).
const sizeOfTable = `SELECT coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size($1::regclass))::bigint
	FROM pg_partition_tree($1::regclass)`

// soakTables are the tables whose size a soak watches.
var soakTables = []string{"events", "deliveries", "delivery_attempts", "endpoint_health", "latency_histograms"}

// SoakInterval is one interval of a soak.
type SoakInterval struct {
	Offset     time.Duration    // from the window's start
	Deliveries int              // deliveries of the events created in it
	Sent       int              // requests that reached the receiver in it
	Enqueue    Percentiles      // enqueue to first attempt, for its events
	TableBytes map[string]int64 // soakTables' total sizes at its end
	RSS        int64            // this process's resident memory at its end
	// GoHeap is the Go heap's live and unswept objects at its end, GoHeld
	// all the memory the Go runtime holds from the OS and has not returned
	// (heap, stacks, its own): with RSS, they tell growth in Go's objects
	// from growth outside them.
	GoHeap, GoHeld int64
	// CPUSelf and CPUDB are the CPU time this process (bench, worker and
	// receiver) and the private cluster used in it per request sent, and
	// Busy the share of the machine's CPU time that was busy: the work per
	// request is the same in every interval, so a rise in both the CPU
	// per request and the latency, with the machine no busier, is the
	// machine running slower, not hookline doing more.
	CPUSelf, CPUDB time.Duration
	Busy           float64
	// RefWork is the CPU time a fixed piece of work took at its end
	// (machineSpeed): when it rises with the CPU per request, the machine
	// got slower, not hookline costlier.
	RefWork time.Duration
	// SchedP99 is the p99 of the time this process's goroutines waited,
	// runnable, for a thread to run on (runtime/metrics
	// /sched/latencies:seconds), over the interval: the wait for a core
	// that the CPU per request does not show.
	SchedP99 time.Duration
	// SecondP99 is the median, over the interval's seconds, of each
	// second's p99 of event created → request received (the timeline's
	// measure). An interval's own p99 is its slowest 1 %, which one slow
	// second can make on its own; the median of the seconds' p99s shows
	// whether the typical second got slower.
	SecondP99 time.Duration
	// ReceivedP99 is the p99 of event created → request received over
	// every request that arrived in the interval, from the timeline: the
	// same tail as Enqueue.P99 plus the ingest's commit and the send, and
	// measured without reading the database.
	ReceivedP99 time.Duration
	// CommitP99 is the p99 of the commit probe's round trips begun in the
	// interval (probeCommits): the reference for the deliveries' p99,
	// measured beside them.
	CommitP99 time.Duration
	// FixedWork is the mean wall time of fixedWork on a real-time thread
	// in the interval (probeMachine): it rises when the machine beneath
	// this one runs the same work slower.
	FixedWork time.Duration
	// DiskWrite and DiskFlush are the mean time of a write and of a
	// cache flush on the device holding the cluster's WAL, over the
	// interval (diskSample; 0 for a database elsewhere): a commit waits
	// for the WAL's write and flush.
	DiskWrite, DiskFlush time.Duration
	// WALBytes and WALPages are the WAL the cluster wrote in the interval
	// per request sent, in all and in full-page images (pg_stat_wal): a
	// page's first change after a checkpoint writes the whole page.
	// Backends report their WAL to pg_stat_wal a second or more after
	// writing it, so an interval of a minute is off by about that much;
	// one of a second may read next to none of its own.
	WALBytes, WALPages float64
}

// walSample is pg_stat_wal's totals: bytes written and full-page images.
type walSample struct {
	bytes, pages int64
	ok           bool
}

// sampleWAL reads pg_stat_wal (PostgreSQL 14 and later; not ok before).
func sampleWAL(ctx context.Context, pool *pgxpool.Pool) walSample {
	var w walSample
	w.ok = pool.QueryRow(ctx, "SELECT wal_bytes::bigint, wal_fpi FROM pg_stat_wal").Scan(&w.bytes, &w.pages) == nil
	return w
}

// soakSampler records table sizes, RSS and requests sent at every interval.
// With early set (retention deletes within the soak, and the reads are not
// left out: SteadyOptions.NoLiveReads) it also reads the latencies of the
// soak's events during the run, while their rows are still there
// (readBehind).
type soakSampler struct {
	every  time.Duration
	start  time.Time
	warmup time.Duration // before start; its events are read, not reported
	mu     sync.Mutex
	got    []SoakInterval
	// behind holds, by interval, the latencies read during the run.
	behind map[int]*latency.Histogram
	// reads, readTime and readMax are the reads made during the window,
	// their time by the interval they ran in and the longest (the bench's
	// own load on the database); the warm-up's are not counted.
	reads    int
	readTime map[int]time.Duration
	readMax  time.Duration
	// commits holds, by interval, the commit probe's round trips.
	commits map[int]*latency.Histogram
	// work holds, by interval, probeMachine's wall times; realtime says
	// whether its thread had real-time priority.
	work     map[int]*latency.Histogram
	realtime bool
	done     chan struct{}
	wg       sync.WaitGroup
}

func startSoakSampler(ctx context.Context, pool *pgxpool.Pool, postmaster int, every time.Duration, start time.Time, warmup time.Duration, sent func() int64, early bool) *soakSampler {
	s := &soakSampler{every: every, start: start, warmup: warmup, behind: map[int]*latency.Histogram{}, readTime: map[int]time.Duration{}, commits: map[int]*latency.Histogram{}, work: map[int]*latency.Histogram{}, done: make(chan struct{})}
	s.wg.Go(func() { s.probeCommits(ctx, pool) })
	s.wg.Go(func() { s.probeMachine(ctx) })
	// The reference work's buffer (4 MiB, refWork) is made and hashed now,
	// before the window. Made at the first interval's end, after its RSS
	// was read, it stayed live from then on, and the heap the garbage
	// collector aims for (twice the live heap) grew by twice its size:
	// the runtime's memory, and RSS with it, stepped up by 8-10 MiB from
	// the first interval to the second of every soak and stayed there.
	machineSpeed()
	s.wg.Go(func() {
		select {
		case <-time.After(time.Until(start)):
		case <-s.done:
			return
		}
		dev := walDisk(postmaster)
		prev, prevCPU, prevMachine, prevSched, prevDisk, prevWAL := sent(), sampleCPU(postmaster), sampleMachine(), schedLatencies(), sampleDisk(dev), sampleWAL(ctx, pool)
		sample := func(k int) {
			n, cpu, machine, disk, wal := sent(), sampleCPU(postmaster), sampleMachine(), sampleDisk(dev), sampleWAL(ctx, pool)
			iv := SoakInterval{Offset: time.Duration(k) * every, Sent: int(n - prev), TableBytes: map[string]int64{}, RSS: rss()}
			iv.GoHeap, iv.GoHeld = goMemory()
			iv.CPUSelf = perItem(prevCPU.self, cpu.self, iv.Sent)
			if cpu.dbOK {
				iv.CPUDB = perItem(prevCPU.db, cpu.db, iv.Sent)
			}
			iv.Busy = machine.busySince(prevMachine)
			iv.DiskWrite, iv.DiskFlush = disk.since(prevDisk)
			if wal.ok && prevWAL.ok && iv.Sent > 0 {
				iv.WALBytes = float64(wal.bytes-prevWAL.bytes) / float64(iv.Sent)
				iv.WALPages = float64(wal.pages-prevWAL.pages) / float64(iv.Sent)
			}
			iv.RefWork = machineSpeed()
			sched := schedLatencies()
			iv.SchedP99 = sched.p99Since(prevSched)
			prev, prevCPU, prevMachine, prevSched, prevDisk, prevWAL = n, cpu, machine, sched, disk, wal
			for _, table := range soakTables {
				var b int64
				if err := pool.QueryRow(ctx, sizeOfTable, table).Scan(&b); err == nil {
					iv.TableBytes[table] = b
				}
			}
			s.mu.Lock()
			s.got = append(s.got, iv)
			s.mu.Unlock()
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for k := 1; ; k++ {
			select {
			case <-t.C:
			case <-s.done:
				// The run ends as its last interval does: stop and the
				// last tick come together, and whichever came first, the
				// last interval is sampled (it was lost when stop won).
				if time.Since(start) >= time.Duration(k)*every-every/10 {
					sample(k)
				}
				return
			case <-ctx.Done():
				return
			}
			sample(k)
		}
	})
	if early {
		s.wg.Go(func() { s.readBehind(ctx, pool) })
	}
	return s
}

// readBehind reads, every second, the enqueue-to-first-attempt latencies
// of the events created in the seconds that have become one and a half
// intervals old since the last read: sent by then unless a backlog holds
// them, and not yet past a retention of three intervals. With a warm-up
// shorter than an interval and a half, the first interval runs without
// the reads and the others with them.
//
// A second at a time, not an interval at a time: the read runs beside the
// traffic it measures, and one read of a minute's 180,000 deliveries (a
// hash join over a minute of events, deliveries and attempts) took 2 to 6
// seconds of PostgreSQL's CPU at once, in the soak's busiest minutes. That
// burst is long enough to set a minute's p99 on its own: the p99 is the
// minute's slowest 0.6 seconds of traffic. A second's deliveries are
// read from their own rows (readSlice). A read that fails is tried again
// at the next tick, with the seconds that came since.
func (s *soakSampler) readBehind(ctx context.Context, pool *pgxpool.Pool) {
	age := s.every + s.every/2
	step := min(time.Second, s.every/2) // a second, unless intervals are shorter
	// From the window's start: read up to here. The warm-up's events are
	// read too (and left out of every figure), from the warm-up's start:
	// with a warm-up of an interval and a half or more the reads are
	// already running when the window opens, and load every interval
	// alike, the process's memory included. (Read from an interval and a
	// half before the window only, they began as it opened, and were part
	// of a step in the Go runtime's memory from the first interval to the
	// second; the larger part was the reference work's buffer, made in
	// startSoakSampler now.)
	next := floorTo(-s.warmup, step)
	s.ticks(ctx, step, func() {
		upto := floorTo(time.Since(s.start)-age, step)
		if upto <= next {
			return
		}
		began := time.Now()
		if err := s.readSlice(ctx, pool, next, upto); err != nil {
			return
		}
		took := time.Since(began)
		if at := began.Sub(s.start); at >= 0 { // the warm-up's are not reported
			s.mu.Lock()
			s.reads++
			s.readTime[int(at/s.every)] += took
			s.readMax = max(s.readMax, took)
			s.mu.Unlock()
		}
		next = upto
	})
}

// ticks calls f every d until the sampler stops or ctx ends.
func (s *soakSampler) ticks(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			f()
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// observeIn counts d into the histogram of interval k in m, made on its
// first count. The caller holds s.mu.
func observeIn(m map[int]*latency.Histogram, k int, d time.Duration) {
	h := m[k]
	if h == nil {
		h = &latency.Histogram{}
		m[k] = h
	}
	h.Observe(d, true)
}

// readSlice counts, into s.behind, the enqueue-to-first-attempt latency
// of every delivery attempted of the events created from the window's
// start plus from to plus to, by the interval its event was created in.
//
// A delivery's created_at is its event's (the same transaction's now()),
// so events are not read, and the bounds on the event ids (UUIDv7, made in
// the bench just before the event's transaction sets created_at) leave
// out every partition of delivered deliveries but the one or two the
// slice falls in. A delivery delivered at its first attempt carries that
// attempt on its row: it finished at delivered_at, after last_response_ms.
// Its start is read from there, not from its attempt row, which would
// cost an index probe into every partition of delivery_attempts for every
// delivery: 3,000 probes a second, 35-98 ms of PostgreSQL a second at
// 3,000 deliveries/s (auto_explain), the largest statement the soak ran.
// delivered_at is the attempt's end, its start plus its duration, so the
// start read this way is the attempt row's (TestSoakSmall). Any other
// delivery (a retry, a failure) reads its first attempt's row.
func (s *soakSampler) readSlice(ctx context.Context, pool *pgxpool.Pool, from, to time.Duration) error {
	lo, hi := s.start.Add(from), s.start.Add(to)
	rows, err := pool.Query(ctx, `
		SELECT floor(extract(epoch FROM d.created_at - $1::timestamptz) / $2)::int,
		       CASE WHEN d.status = 'delivered' AND d.attempt_count = 1
		            THEN extract(epoch FROM d.delivered_at - d.created_at)::float8 * 1000 - d.last_response_ms
		            ELSE (SELECT extract(epoch FROM a.started_at - d.created_at)::float8 * 1000
		                  FROM delivery_attempts a
		                  WHERE a.delivery_id = d.id AND a.attempt_no = 1 AND a.started_at >= $5)
		       END
		FROM deliveries d
		WHERE d.event_id >= $3 AND d.event_id < $4
		  AND d.created_at >= $5 AND d.created_at < $6
		  AND d.attempt_count > 0`,
		s.start, s.every.Seconds(), worker.UUIDAt(lo.Add(-time.Second)), worker.UUIDAt(hi.Add(time.Second)), lo, hi)
	if err != nil {
		return err
	}
	type latencyAt struct {
		k  int
		ms float64
	}
	var got []latencyAt
	for rows.Next() {
		var k int
		var ms *float64 // none when retention took the first attempt's row
		if err := rows.Scan(&k, &ms); err != nil {
			rows.Close()
			return err
		}
		if ms != nil {
			got = append(got, latencyAt{k, *ms})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range got {
		observeIn(s.behind, l.k, msDuration(l.ms))
	}
	return nil
}

func (s *soakSampler) stop() {
	close(s.done)
	s.wg.Wait()
}
