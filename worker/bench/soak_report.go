package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker"
)

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
