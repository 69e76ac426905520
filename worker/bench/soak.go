package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// soakLatencies reads the enqueue-to-first-attempt percentiles of the
// events created from start on, by interval, once the run is over.
//
// Bounds on the event ids (UUIDv7, made in the bench just before the
// event's transaction sets created_at, so at most a stall earlier) and on
// the attempts' start let PostgreSQL skip every partition of events,
// delivered deliveries and attempts from before the soak. Hash joins read
// each table once; the planner would take nested loops of index probes
// (one per event into every delivered partition and every attempt
// partition), misled by the partitioned tables' join estimates (millions
// of times the real rows), which took twice as long: 1.8 s against 0.8 s
// for one minute of 3,000 events/s on a quiet machine.
func soakLatencies(ctx context.Context, pool *pgxpool.Pool, start time.Time, every time.Duration) (map[int]Percentiles, error) {
	idLo, idHi := worker.UUIDAt(start.Add(-every/4)), uuid.Max
	byK := map[int]Percentiles{}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_nestloop = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
		SELECT k, count(*),
		       percentile_disc(0.5) WITHIN GROUP (ORDER BY ms),
		       percentile_disc(0.95) WITHIN GROUP (ORDER BY ms),
		       percentile_disc(0.99) WITHIN GROUP (ORDER BY ms),
		       max(ms)
		FROM (SELECT floor(extract(epoch FROM ev.created_at - $1::timestamptz) / $2)::int AS k,
		             extract(epoch FROM a.started_at - ev.created_at)::float8 * 1000 AS ms
		      FROM events ev
		      JOIN deliveries d ON d.event_id = ev.id
		      JOIN delivery_attempts a ON a.delivery_id = d.id AND a.attempt_no = 1
		      WHERE ev.id >= $3 AND ev.id < $4 AND d.event_id >= $3 AND d.event_id < $4
		        AND a.started_at >= $1 AND ev.created_at >= $1) x
		GROUP BY k ORDER BY k`, start, every.Seconds(), idLo, idHi)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, n int
			var p50, p95, p99, most float64
			if err := rows.Scan(&k, &n, &p50, &p95, &p99, &most); err != nil {
				return err
			}
			byK[k] = Percentiles{Count: n, P50: msDuration(p50), P95: msDuration(p95), P99: msDuration(p99), Max: msDuration(most)}
		}
		return rows.Err()
	})
	return byK, err
}

// report adds each interval's latencies (intervals counted from the
// sampler's start, as its requests sent are), read from the database once
// everything is delivered, and writes the soak's table. Where the interval
// was also read during the run, the read that found more deliveries
// counts: attempts only add rows, retention only takes them away. Read
// during the run, percentiles come from a log-bucket histogram, within
// 1 % of the exact ones the read at the end gives.
func (s *soakSampler) report(ctx context.Context, pool *pgxpool.Pool, tl *timeline, r *SteadyReport, out io.Writer) error {
	s.mu.Lock()
	got, reads, readTime, readMax := s.got, s.reads, maps.Clone(s.readTime), s.readMax
	early := map[int]Percentiles{}
	for k, h := range s.behind {
		early[k] = Percentiles{Count: int(h.Count()), P50: h.Quantile(0.50), P95: h.Quantile(0.95), P99: h.Quantile(0.99), Max: h.Max()}
	}
	for i := range got {
		if h := s.commits[i]; h != nil {
			got[i].CommitP99 = h.Quantile(0.99)
		}
		if h := s.work[i]; h != nil {
			got[i].FixedWork = h.Mean()
		}
	}
	rtNote := ""
	if !s.realtime {
		rtNote = " (this run's thread had normal priority, without the privilege for real-time: its figure includes its waits for a core)"
	}
	s.mu.Unlock()
	byK, err := soakLatencies(ctx, pool, s.start, s.every)
	if err != nil {
		return err
	}
	for k, p := range early {
		if p.Count > byK[k].Count {
			byK[k] = p
		}
	}
	for i := range got {
		got[i].Enqueue = byK[i]
		got[i].Deliveries = byK[i].Count
		r.Delivered += byK[i].Count
		// The timeline's seconds the interval overlaps (one at least,
		// for an interval shorter than a second).
		from := int(time.Duration(i) * s.every / time.Second)
		to := max(int(time.Duration(i+1)*s.every/time.Second), from+1)
		got[i].SecondP99 = tl.medianP99(from, to)
		got[i].ReceivedP99 = tl.quantile(from, to, 0.99)
	}
	r.Intervals = got

	fmt.Fprintf(out, "  events queued       %8d  (%d deliveries; %d more events in the warm-up)\n", r.Events, r.Deliveries, r.WarmupEvents)
	fmt.Fprintf(out, "  achieved rate       %8.0f events/s  (asked %d)\n", r.AchievedRate, r.Rate)
	fmt.Fprintf(out, "  every %s: requests sent, enqueue → 1st attempt of the events created in it, table sizes (with indexes) and RSS at its end\n", s.every)
	fmt.Fprintf(out, "  %8s %9s %9s %9s %9s %9s %9s", "at", "sent/s", "p50", "p99", "max", "p99/s", "rcv p99")
	for _, t := range soakTables {
		fmt.Fprintf(out, " %12s", shortTable(t))
	}
	fmt.Fprintf(out, " %9s %15s %6s %8s %9s %10s %8s %17s %16s\n", "RSS", "CPU µs/request", "busy", "ref work", "sched p99", "commit p99", "rt work", "disk write/flush", "WAL/request")
	unread := 0
	for _, iv := range got {
		p50, p99, most := msText(iv.Enqueue.P50), msText(iv.Enqueue.P99), msText(iv.Enqueue.Max)
		if iv.Enqueue.Count == 0 {
			p50, p99, most = "–", "–", "–"
			unread++
		}
		fmt.Fprintf(out, "  %8s %9.0f %9s %9s %9s %9s %9s", iv.Offset, float64(iv.Sent)/s.every.Seconds(),
			p50, p99, most, msText(iv.SecondP99), msText(iv.ReceivedP99))
		for _, t := range soakTables {
			fmt.Fprintf(out, " %12s", mib(iv.TableBytes[t]))
		}
		cpu := fmt.Sprintf("%.0f + %.0f", us(iv.CPUSelf), us(iv.CPUDB))
		if iv.CPUDB == 0 { // a database elsewhere: its CPU is not seen
			cpu = fmt.Sprintf("%.0f + ?", us(iv.CPUSelf))
		}
		disk := "?"
		if iv.DiskWrite > 0 || iv.DiskFlush > 0 {
			disk = fmt.Sprintf("%.2f / %.2f ms", us(iv.DiskWrite)/1000, us(iv.DiskFlush)/1000)
		}
		fmt.Fprintf(out, " %9s %15s %5.0f%% %8s %9s %10s %5.0f µs %17s %7.0f B %4.2f p\n", mib(iv.RSS), cpu, 100*iv.Busy, msText(iv.RefWork), msText(iv.SchedP99), msText(iv.CommitP99), us(iv.FixedWork), disk, iv.WALBytes, iv.WALPages)
	}
	fmt.Fprintf(out, "  p99/s: the median of each second's p99, event created → request received; rcv p99: the p99 of event created → request received over the interval's requests; CPU µs/request: this process (bench, worker, receiver) + PostgreSQL; busy: the machine's CPU time not idle; ref work: the CPU time of a fixed piece of work (SHA-256 of 4 MiB), which rises when the machine runs slower; sched p99: the p99 of this process's goroutines' wait, runnable, for a thread; commit p99: the p99 of a transaction that only commits, on a connection of its own, 20 a second (the reference: the same work every interval, with the deliveries' waits for a core and the WAL's flush); rt work: the mean wall time of another fixed piece of work (SHA-256 of 32 KiB, 8 times), 20 times a second on a real-time thread, which no ordinary thread on this machine can preempt: it rises when the machine beneath runs slower%s; disk write/flush: the mean time of a write and of a cache flush on the device holding the cluster's WAL (/proc/diskstats; ? for a database elsewhere); WAL/request: the WAL the cluster wrote per request sent, in bytes (B) and in full-page images (p), which a page's first change after a checkpoint writes\n", rtNote)
	if unread > 0 {
		fmt.Fprintf(out, "  –: no enqueue → 1st attempt latencies for %d intervals: retention had taken their deliveries before the read at the end, and no read during the run counted them\n", unread)
	}
	fmt.Fprintf(out, "  Go's heap objects / memory the Go runtime holds, at each interval's end:")
	for _, iv := range got {
		fmt.Fprintf(out, " %.1f/%.1f", float64(iv.GoHeap)/(1<<20), float64(iv.GoHeld)/(1<<20))
	}
	fmt.Fprintf(out, " MiB\n")
	if len(got) >= 2 {
		first, last := got[0], got[len(got)-1]
		fmt.Fprintf(out, "  last ÷ first interval: sent %s, p99 %s, p99/s %s, rcv p99 %s, RSS %s; the reference's commit p99 %s, rt work %s, disk flush %s\n",
			ratio(float64(last.Sent), float64(first.Sent)), ratio(float64(last.Enqueue.P99), float64(first.Enqueue.P99)),
			ratio(float64(last.SecondP99), float64(first.SecondP99)), ratio(float64(last.ReceivedP99), float64(first.ReceivedP99)),
			ratio(float64(last.RSS), float64(first.RSS)), ratio(float64(last.CommitP99), float64(first.CommitP99)),
			ratio(float64(last.FixedWork), float64(first.FixedWork)), ratio(float64(last.DiskFlush), float64(first.DiskFlush)))
	}
	if reads > 0 {
		var all time.Duration
		each := make([]string, len(got))
		for i := range got {
			all += readTime[i]
			each[i] = fmt.Sprintf("%.1f", readTime[i].Seconds())
		}
		fmt.Fprintf(out, "  latencies read during the run: %d reads, %.1f s in all (in each interval: %s s), the longest %s\n",
			reads, all.Seconds(), strings.Join(each, " "), msText(readMax))
	}
	fmt.Fprintf(out, "  drained %.1f s after the last post\n", r.Drain.Seconds())
	return nil
}

func shortTable(t string) string {
	return strings.NewReplacer("delivery_attempts", "attempts", "latency_histograms", "histograms", "endpoint_health", "health").Replace(t)
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func msText(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

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
