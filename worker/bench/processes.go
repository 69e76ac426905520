package bench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Deployed holds the figures of the drain in the deployed topology:
// hookline web, hookline worker and the receiver each in a process of its
// own, beside PostgreSQL, and the events queued through the API.
type Deployed struct {
	// Ingest is queueing the deliveries through the web process's batch
	// API, with no worker running.
	Ingest Phase
	// Drain runs from the first attempt's start to the last attempt's end
	// (delivery_attempts); Recorded from the first attempt's start until
	// every delivery is recorded delivered (the in-process worker's figure
	// is timed so, from its start); Wall from the worker process's start,
	// so it includes the process starting and connecting.
	Drain, Recorded, Wall Phase
	Attempts              int   // attempts recorded
	Received              int64 // requests the receiver process answered
	// CPU time per delivery of each process during Wall (the worker's
	// includes its start); Database is 0 when the database's processes
	// are not known (Options.DatabaseURL).
	WorkerCPU, WebCPU, SinkCPU, DatabaseCPU time.Duration
	// WorkerStartCPU is the worker process's CPU time until the receiver
	// had its first requests (sampled every 20 ms, so it holds some
	// sends); WorkerSendingCPU its CPU time per delivery after that.
	WorkerStartCPU, WorkerSendingCPU time.Duration
	// CPU time per delivery queued, during Ingest.
	IngestWebCPU, IngestDatabaseCPU time.Duration
	// Raw is the raw loopback HTTP requests (as the in-process raw phase
	// sends them) from this process to the receiver process: the ceiling
	// of the topology, and what its HTTP exchange alone costs each side
	// (RawClientCPU in this process, RawSinkCPU in the receiver's), for
	// the worker's and the receiver's CPU per delivery to be read against.
	Raw                      Phase
	RawClientCPU, RawSinkCPU time.Duration
}

const (
	// ingestClients post batches at once, as a few producers would.
	ingestClients = 4
	// ingestBatchMax events per batch request at most.
	ingestBatchMax = 100
	// defaultBodyLimit is hookline's default HOOKLINE_MAX_BODY_BYTES; the
	// batches are sized to fit it, as a producer's would be.
	defaultBodyLimit = 262144
	// childStopWait is how long a child gets after SIGTERM before it is
	// killed (the worker's shutdown grace is 20 s; nothing is in flight
	// when the bench stops it).
	childStopWait = 30 * time.Second
	// drainStall fails the drain when neither the receiver nor the queue
	// has moved for this long.
	drainStall = time.Minute
)

// processes measures the deployed topology on bdb's database, whose
// hookline tables it empties: it starts the receiver (hookline bench
// -sink) and hookline web from o.Executable, creates an API key (hookline
// apikey create), a partner and the endpoints through the API, queues the
// deliveries through the batch events API, then starts hookline worker
// and times the drain. inProcess is the in-process worker's phase of the
// same run, for the ratio (zero: not printed). Every process it starts is
// stopped before it returns.
func processes(ctx context.Context, bdb benchDB, o Options, inProcess Phase, out io.Writer) (d Deployed, err error) {
	if o.Executable == "" {
		return d, errors.New("the deployed topology needs the hookline executable (Options.Executable)")
	}
	pool := bdb.pool
	if _, err := pool.Exec(ctx, "TRUNCATE partners, endpoints, endpoint_secrets, endpoint_health, events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return d, err
	}
	dir, err := os.MkdirTemp("", "hlprocs")
	if err != nil {
		return d, err
	}
	defer os.RemoveAll(dir)
	addr, err := freeLoopbackAddr()
	if err != nil {
		return d, err
	}
	payload := makePayload(o.PayloadBytes)
	events := o.Deliveries / o.Endpoints
	batch := min(ingestBatchMax, (events+ingestClients-1)/ingestClients, max(1, (defaultBodyLimit-1024)/(len(payload)+64)))
	env, err := processEnv(bdb.url, addr, dir, o, batch, len(payload))
	if err != nil {
		return d, err
	}
	var kids children
	defer func() { err = errors.Join(err, kids.stopAll()) }()

	sinkOut := &lockedBuffer{}
	sink, err := kids.start(o.Executable, env, dir, "sink", sinkOut, "bench", "-sink", "127.0.0.1:0", "-receiver-delay", o.ReceiverDelay.String())
	if err != nil {
		return d, err
	}
	sinkURL, err := sink.waitLine(ctx, sinkOut, sinkListening)
	if err != nil {
		return d, err
	}
	if err := rawAcross(ctx, &d, sink, sinkURL, o, payload); err != nil {
		return d, err
	}
	key, err := createAPIKey(ctx, o.Executable, env, dir)
	if err != nil {
		return d, err
	}
	// The key goes with the run: a database given with -database-url
	// keeps no key it does not know about.
	defer func() {
		hash := sha256.Sum256([]byte(key))
		_, derr := pool.Exec(context.WithoutCancel(ctx), "DELETE FROM api_keys WHERE key_hash = $1", hash[:])
		err = errors.Join(err, derr)
	}()
	web, err := kids.start(o.Executable, env, dir, "web", nil, "web")
	if err != nil {
		return d, err
	}
	api := &apiClient{base: "http://" + addr, key: key, hc: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: ingestClients},
	}}
	defer api.hc.CloseIdleConnections()
	if err := api.waitReady(ctx, web); err != nil {
		return d, err
	}
	if err := createEndpoints(ctx, api, sinkURL, o); err != nil {
		return d, err
	}

	// Ingest through the API, no worker running.
	bodies := batchBodies(events, batch, payload)
	c0 := sampleCPU(bdb.postmaster)
	w0, _ := web.cpu()
	start := time.Now()
	if err := api.postBatches(ctx, bodies); err != nil {
		return d, fmt.Errorf("queue through the API: %w", err)
	}
	d.Ingest = Phase{Count: o.Deliveries, Duration: time.Since(start)}
	c1 := sampleCPU(bdb.postmaster)
	w1, _ := web.cpu()
	d.IngestWebCPU = perItem(w0, w1, o.Deliveries)
	if c0.dbOK && c1.dbOK {
		d.IngestDatabaseCPU = perItem(c0.db, c1.db, o.Deliveries)
	}
	var queued int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE status = 'pending'").Scan(&queued); err != nil {
		return d, err
	}
	if queued != o.Deliveries {
		return d, fmt.Errorf("the API queued %d deliveries, want %d", queued, o.Deliveries)
	}
	// Fresh statistics, as the in-process phases have (see queue).
	if _, err := pool.Exec(ctx, "ANALYZE deliveries; ANALYZE events; ANALYZE endpoints; ANALYZE endpoint_health"); err != nil {
		return d, err
	}

	// The drain: the worker process starts on a full queue.
	received0, err := api.sinkCount(ctx, sinkURL)
	if err != nil {
		return d, err
	}
	c0 = sampleCPU(bdb.postmaster)
	w0, _ = web.cpu()
	s0, _ := sink.cpu()
	start = time.Now()
	worker, err := kids.start(o.Executable, env, dir, "worker", nil, "worker")
	if err != nil {
		return d, err
	}
	var firstGot int64
	if d.WorkerStartCPU, firstGot, err = waitDrained(ctx, api, pool, worker, sinkURL, received0, received0+int64(o.Deliveries)); err != nil {
		return d, err
	}
	allRecorded := time.Now()
	d.Wall = Phase{Count: o.Deliveries, Duration: allRecorded.Sub(start)}
	c1 = sampleCPU(bdb.postmaster)
	w1, _ = web.cpu()
	s1, _ := sink.cpu()
	wk, ok := worker.cpu()
	if !ok {
		return d, errors.New("cannot read the worker process's CPU time")
	}
	d.WorkerCPU = perItem(0, wk, o.Deliveries)
	d.WorkerSendingCPU = perItem(d.WorkerStartCPU, wk, o.Deliveries-int(firstGot-received0))
	d.WebCPU = perItem(w0, w1, o.Deliveries)
	d.SinkCPU = perItem(s0, s1, o.Deliveries)
	if c0.dbOK && c1.dbOK {
		d.DatabaseCPU = perItem(c0.db, c1.db, o.Deliveries)
	}
	var first, last time.Time
	if err := pool.QueryRow(ctx, `SELECT count(*), min(started_at), max(started_at + duration_ms * interval '1 millisecond')
		FROM delivery_attempts`).Scan(&d.Attempts, &first, &last); err != nil {
		return d, fmt.Errorf("attempt span: %w", err)
	}
	d.Drain = Phase{Count: o.Deliveries, Duration: last.Sub(first)}
	d.Recorded = Phase{Count: o.Deliveries, Duration: allRecorded.Sub(first)}

	// The worker stops first, so that whatever it still sent is counted.
	if err := worker.stop(); err != nil {
		return d, err
	}
	received, err := api.sinkCount(ctx, sinkURL)
	if err != nil {
		return d, err
	}
	d.Received = received - received0
	if err := kids.stopAll(); err != nil {
		return d, err
	}

	fmt.Fprintf(out, "deployed topology: hookline web, hookline worker and the receiver each in their own process, PostgreSQL in its own; events queued through the API\n")
	fmt.Fprintf(out, "  raw loopback HTTP      %8.0f req/s  (this process to the receiver process, no database)\n", d.Raw.PerSecond())
	fmt.Fprintf(out, "  CPU per request     sender %.1f µs, receiver process %.1f µs\n", us(d.RawClientCPU), us(d.RawSinkCPU))
	fmt.Fprintf(out, "  ingest through the API %8.0f deliveries queued/s  (%d events in batches of %d from %d clients, no worker running)\n",
		d.Ingest.PerSecond(), events, batch, ingestClients)
	printCPU(out, fmt.Sprintf("queued: web process %.1f µs", us(d.IngestWebCPU)), d.IngestDatabaseCPU)
	ratio := ""
	if inProcess.PerSecond() > 0 {
		ratio = fmt.Sprintf(" (%.2f × the in-process hookline worker, timed alike)", d.Recorded.PerSecond()/inProcess.PerSecond())
	}
	fmt.Fprintf(out, "  deployed worker     %8.0f deliveries/s  first attempt to last\n", d.Drain.PerSecond())
	fmt.Fprintf(out, "                      %8.0f deliveries/s  first attempt until all recorded%s\n", d.Recorded.PerSecond(), ratio)
	fmt.Fprintf(out, "                      %8.0f deliveries/s  worker process start until all recorded\n", d.Wall.PerSecond())
	printCPU(out, fmt.Sprintf("worker process %.1f µs (%.1f µs once sending; %.0f ms until its first requests arrived), web process %.1f µs, receiver process %.1f µs",
		us(d.WorkerCPU), us(d.WorkerSendingCPU), float64(d.WorkerStartCPU)/float64(time.Millisecond), us(d.WebCPU), us(d.SinkCPU)), d.DatabaseCPU)
	fmt.Fprintf(out, "  receiver got %d requests for %d deliveries (%d attempts recorded)\n", d.Received, o.Deliveries, d.Attempts)
	return d, nil
}

// rawAcross times the raw requests from this process to the receiver
// process, with the CPU time each side spends. This process runs nothing
// else meanwhile (its database pool is idle), so its CPU time is the
// sender's.
func rawAcross(ctx context.Context, d *Deployed, sink *child, sinkURL string, o Options, payload []byte) error {
	guard := loopbackGuard()
	c0 := sampleCPU(0)
	s0, _ := sink.cpu()
	p, err := raw(ctx, guard, &receiver{url: sinkURL}, o, payload)
	if err != nil {
		return fmt.Errorf("raw requests to the receiver process: %w", err)
	}
	c1 := sampleCPU(0)
	s1, ok := sink.cpu()
	if !ok {
		return errors.New("cannot read the receiver process's CPU time")
	}
	d.Raw = p
	d.RawClientCPU = perItem(c0.self, c1.self, p.Count)
	d.RawSinkCPU = perItem(s0, s1, p.Count)
	return nil
}

// waitDrained waits until the receiver, which had had base requests,
// has had want and no delivery is left undelivered. It returns the
// worker's CPU time when the first requests had arrived, and the
// receiver's count then. The receiver's count is asked first: it costs
// the database nothing, and counting rows while the worker drains would.
func waitDrained(ctx context.Context, api *apiClient, pool *pgxpool.Pool, worker *child, sinkURL string, base, want int64) (startCPU time.Duration, firstGot int64, err error) {
	moved := time.Now()
	lastGot := base
	lastLeft := -1
	for {
		got, err := api.sinkCount(ctx, sinkURL)
		if err != nil {
			return 0, 0, err
		}
		if got != lastGot {
			if lastGot == base {
				startCPU, _ = worker.cpu()
				firstGot = got
			}
			lastGot, moved = got, time.Now()
		}
		if got >= want {
			left, err := remaining(ctx, pool)
			if err != nil {
				return 0, 0, err
			}
			if left == 0 {
				return startCPU, firstGot, nil
			}
			if left != lastLeft {
				lastLeft, moved = left, time.Now()
			}
		}
		if time.Since(moved) > drainStall {
			return 0, 0, fmt.Errorf("drain stalled: the receiver has had %d of %d requests, nothing moved for %s%s", got, want, drainStall, worker.logTail())
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-worker.done:
			return 0, 0, fmt.Errorf("the worker process exited during the drain: %v%s", worker.err, worker.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
