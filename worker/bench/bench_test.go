package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/db/secretbox"
)

// TestRunSmall runs the whole benchmark on a tiny queue: every phase
// delivers what it must and the report names each figure.
func TestRunSmall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, err := Run(context.Background(), Options{
		Deliveries: 400, Endpoints: 4, Concurrency: 16, NaiveConcurrency: 4,
		NaiveDuration: 500 * time.Millisecond, DatabaseURL: dbtest.URL(t),
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.Raw.Count != 400 || r.Worker.Count != 400 || r.Bare.Count != 400 || r.Naive.Count == 0 || r.Worker.PerSecond() <= 0 {
		t.Fatalf("report %+v", r)
	}
	if r.WorkerCPU <= 0 || r.RawCPU <= 0 || r.BareCPU <= 0 {
		t.Fatalf("CPU per delivery %v, per raw request %v", r.WorkerCPU, r.RawCPU)
	}
	for _, want := range []string{"raw loopback HTTP", "hookline worker", "CPU per delivery", "bare batched worker", "naive one-row"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestProcTimes parses /proc/<pid>/stat, whose command name may hold
// spaces and parentheses.
func TestProcTimes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stat")
	line := "4242 (postgres: a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 1 1 1\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	ppid, ticks, ok := procTimes(path)
	if !ok || ppid != 17 || ticks != 325 {
		t.Fatalf("procTimes = %d, %d, %v; want 17, 325, true", ppid, ticks, ok)
	}
	if s := sampleCPU(os.Getpid()); s.self <= 0 || !s.dbOK {
		t.Fatalf("sampling this process as the postmaster: %+v", s)
	}
}

// TestQueueFilter: with Filter every endpoint gets a filter that the bench
// payload passes (the same deliveries are queued) and that other payloads
// fail (fan-out evaluates it).
func TestQueueFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := Options{Deliveries: 40, Endpoints: 4, Filter: true}
	pool := seededPool(t, &o)
	var filtered int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM endpoints WHERE filter IS NOT NULL").Scan(&filtered); err != nil || filtered != 4 {
		t.Fatalf("%d endpoints with a filter (%v), want 4", filtered, err)
	}
	if _, err := queue(ctx, pool, o, makePayload(o.PayloadBytes)); err != nil {
		t.Fatal(err)
	}
	if _, err := queue(ctx, pool, o, []byte(`{"type":"conversion.approved","payout":0}`)); err != nil {
		t.Fatal(err)
	}
	n, err := remaining(ctx, pool)
	if err != nil || n != 40 {
		t.Fatalf("%d deliveries queued (%v), want 40: the passing payload's only", n, err)
	}
}

// BenchmarkIngest compares the ingest statements (the bench's queue phase:
// 200 events fanned out to 100 endpoints) without filters and with a filter
// on every endpoint. Each iteration runs both, back to back, so a noisy
// machine affects both alike; it reports each throughput and their ratio:
//
//	go test -run '^$' -bench Ingest -benchtime 10x ./worker/bench
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	o := Options{Deliveries: 20000, Endpoints: 100}
	pool := seededPool(b, &o)
	payload := makePayload(o.PayloadBytes)
	run := func(filtered bool) time.Duration {
		for i := range o.Endpoints {
			var f *string
			if filtered {
				f = new(benchFilter(i))
			}
			if _, err := pool.Exec(ctx, "UPDATE endpoints SET filter = $1::jsonb WHERE name = $2", f, fmt.Sprint("ep", i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := reset(ctx, pool); err != nil {
			b.Fatal(err)
		}
		p, err := queue(ctx, pool, o, payload)
		if err != nil {
			b.Fatal(err)
		}
		return p.Duration
	}
	var plain, filtered time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first: the second of a pair finds the
		// tables just vacuumed by neither, but warmer.
		if i%2 == 0 {
			plain += run(false)
			filtered += run(true)
		} else {
			filtered += run(true)
			plain += run(false)
		}
	}
	n := float64(b.N * o.Deliveries)
	b.ReportMetric(n/plain.Seconds(), "plain-deliveries/s")
	b.ReportMetric(n/filtered.Seconds(), "filtered-deliveries/s")
	b.ReportMetric(plain.Seconds()/filtered.Seconds(), "filtered/plain")
}

// seededPool is a pool on a fresh migrated database seeded for o (its
// defaults filled in), with endpoints that point nowhere: for benches and
// tests of the queueing side only. The pool closes at the end of tb.
func seededPool(tb testing.TB, o *Options) *pgxpool.Pool {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	if err := migrations.Up(ctx, pool); err != nil {
		tb.Fatal(err)
	}
	box, _ := secretbox.New(make([]byte, 32), nil)
	o.defaults()
	if err := seed(ctx, pool, box, &receiver{url: "http://127.0.0.1:9"}, *o); err != nil {
		tb.Fatal(err)
	}
	return pool
}

// TestMeasuredCountsAnExitingProcess: measured reads the cluster's CPU when
// the phase calls end, before the phase stops what it started. A process
// that exits takes its CPU time with it (the worker's own PostgreSQL
// sessions close when it stops); here a child of this process, standing in
// as the postmaster, burns CPU, and exits after end.
func TestMeasuredCountsAnExitingProcess(t *testing.T) {
	var burned time.Duration
	_, _, database, err := measured(os.Getpid(), func(end func()) (Phase, error) {
		child := exec.Command("sh", "-c", `i=0; while [ $i -lt 500000 ]; do i=$((i+1)); done; echo burned; read x; exit 0`)
		stdin, err := child.StdinPipe()
		if err != nil {
			return Phase{}, err
		}
		stdout, err := child.StdoutPipe()
		if err != nil {
			return Phase{}, err
		}
		if err := child.Start(); err != nil {
			return Phase{}, err
		}
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			return Phase{}, err
		}
		// The child now waits on its input, its loop's time accounted.
		stat := fmt.Sprintf("/proc/%d/stat", child.Process.Pid)
		_, ticks, ok := procTimes(stat)
		if burned = time.Duration(ticks) * time.Second / clockTicks; !ok || burned < 100*time.Millisecond {
			return Phase{}, fmt.Errorf("the child burned %v (%v), want at least 100ms", burned, ok)
		}
		end()
		stdin.Close()
		return Phase{Count: 1}, child.Wait()
	})
	if err != nil {
		t.Fatal(err)
	}
	if database < burned {
		t.Fatalf("database CPU %v: the exited child's %v was not counted", database, burned)
	}
}
