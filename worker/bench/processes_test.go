package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/bench/hooklinebin"
)

// TestProcessesDeliverEachOnce drains a small queue in the deployed
// topology: every delivery queued through the API reaches the receiver
// process exactly once, the report names the topology, and no process the
// bench started outlives it.
func TestProcessesDeliverEachOnce(t *testing.T) {
	t.Parallel()
	processesMu.Lock() // each checks that no child of this process outlives it
	defer processesMu.Unlock()
	exe := hooklinebin.Path(t)
	ctx := context.Background()
	o := Options{Deliveries: 500, Endpoints: 5, Concurrency: 16, DatabaseURL: dbtest.URL(t), Executable: exe}
	o.defaults()
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", 4, o.Logger, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.close()
	before := childPIDs(t)

	var out bytes.Buffer
	d, err := processes(ctx, bdb, o, Phase{Count: 500, Duration: time.Second}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if left := slices.DeleteFunc(childPIDs(t), func(pid int) bool { return slices.Contains(before, pid) }); len(left) > 0 {
		t.Errorf("processes left running: %v", left)
	}
	// 500 requests for 500 deliveries, all delivered: each exactly once.
	var delivered, attempts, attempted, keys int
	if err := bdb.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries WHERE status = 'delivered'),
		(SELECT count(*) FROM delivery_attempts), (SELECT count(DISTINCT delivery_id) FROM delivery_attempts),
		(SELECT count(*) FROM api_keys)`).Scan(&delivered, &attempts, &attempted, &keys); err != nil {
		t.Fatal(err)
	}
	if keys != 0 {
		t.Errorf("%d API keys left behind", keys)
	}
	if d.Received != 500 || delivered != 500 || attempts != 500 || attempted != 500 || d.Attempts != 500 {
		t.Fatalf("receiver got %d requests; %d delivered, %d attempts of %d deliveries (report: %d); want 500 each",
			d.Received, delivered, attempts, attempted, d.Attempts)
	}
	if d.Ingest.Count != 500 || d.Ingest.PerSecond() <= 0 || d.Drain.PerSecond() <= 0 || d.Wall.Duration < d.Recorded.Duration || d.Recorded.Duration < d.Drain.Duration {
		t.Fatalf("phases: ingest %+v, drain %+v, recorded %+v, wall %+v", d.Ingest, d.Drain, d.Recorded, d.Wall)
	}
	if d.WorkerCPU <= 0 || d.SinkCPU < 0 || d.WebCPU < 0 {
		t.Fatalf("CPU per delivery: worker %v, web %v, receiver %v", d.WorkerCPU, d.WebCPU, d.SinkCPU)
	}
	// The raw reference went to the receiver process too, before the
	// drain, and is not counted as deliveries.
	if d.Raw.Count != 500 || d.Raw.PerSecond() <= 0 || d.RawClientCPU <= 0 || d.RawSinkCPU < 0 {
		t.Fatalf("raw across processes: %+v, sender %v, receiver %v", d.Raw, d.RawClientCPU, d.RawSinkCPU)
	}
	for _, want := range []string{"deployed topology", "raw loopback HTTP", "CPU per request", "ingest through the API", "deployed worker", "worker process", "receiver got 500 requests for 500 deliveries"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}

// TestProcessesStopOnCancel: cancelled while the worker process drains,
// the bench returns and has stopped every process it started.
func TestProcessesStopOnCancel(t *testing.T) {
	t.Parallel()
	processesMu.Lock() // each checks that no child of this process outlives it
	defer processesMu.Unlock()
	exe := hooklinebin.Path(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A slow receiver: the drain lasts long enough to be interrupted.
	o := Options{Deliveries: 500, Endpoints: 5, Concurrency: 8, ReceiverDelay: 200 * time.Millisecond,
		DatabaseURL: dbtest.URL(t), Executable: exe}
	o.defaults()
	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", 4, o.Logger, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.close()
	before := childPIDs(t)

	done := make(chan error, 1)
	go func() {
		_, err := processes(ctx, bdb, o, Phase{}, io.Discard)
		done <- err
	}()
	// Cancel once something has been delivered: the worker process runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := bdb.pool.QueryRow(context.Background(), "SELECT count(*) FROM delivery_attempts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("returned before the drain: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no attempt within 60 s")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("cancelled mid-drain, yet no error")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("still running 60 s after cancel")
	}
	if left := slices.DeleteFunc(childPIDs(t), func(pid int) bool { return slices.Contains(before, pid) }); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}

// childPIDs lists this process's children, reaped or not.
func childPIDs(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, path := range stats {
		ppid, _, ok := procTimes(path)
		if ok && ppid == os.Getpid() {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestProcessEnvGODEBUG: the topology's processes run with the Go runtime
// settings of the bench's own process, and with none it had none.
func TestProcessEnvGODEBUG(t *testing.T) {
	godebug := func(env []string) []string {
		return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, "GODEBUG=") })
	}
	t.Setenv("GODEBUG", "schedtrace=0")
	env, err := processEnv("postgres://u@db.invalid/h", "127.0.0.1:1", t.TempDir(), Options{Concurrency: 1}, 10, 512)
	if err != nil {
		t.Fatal(err)
	}
	if got := godebug(env); !slices.Equal(got, []string{"GODEBUG=schedtrace=0"}) {
		t.Errorf("GODEBUG %q, want the bench's schedtrace=0", got)
	}
	os.Unsetenv("GODEBUG")
	if env, err = processEnv("postgres://u@db.invalid/h", "127.0.0.1:1", t.TempDir(), Options{Concurrency: 1}, 10, 512); err != nil {
		t.Fatal(err)
	}
	if got := godebug(env); len(got) != 0 {
		t.Errorf("GODEBUG %q without one in the bench's environment", got)
	}
}

// TestProcessEnvTracing: the OTEL_* variables the bench runs with reach the
// topology's processes, so `OTEL_... hookline bench` measures traces on.
func TestProcessEnvTracing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:14318")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0.01")
	env, err := processEnv("postgres://u@db.invalid/h", "127.0.0.1:1", t.TempDir(), Options{Concurrency: 1}, 10, 512)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14318", "OTEL_TRACES_SAMPLER_ARG=0.01"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s not passed on: %q", want, env)
		}
	}
}

// processesMu runs the deployed topology's tests one at a time, beside the
// package's other tests: each lists this process's children before and
// after, and would count the other's as left running.
var processesMu sync.Mutex
