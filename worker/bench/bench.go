// Package bench measures delivery throughput: hookline's worker against the
// raw loopback HTTP ceiling (the same requests, no database), against a
// bare batched worker (the same rows stored per delivery, none of
// hookline's features) and against a naive worker that claims, sends and
// records one row per transaction, all in one run on one machine, so the
// ratios mean something on a noisy host.
package bench

// Long file: the drain bench runs every worker it compares (raw, hookline, bare, naive, ingest) in one run so their ratios share one machine state.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

// Options of a run.
type Options struct {
	Deliveries   int // total deliveries (default 20,000)
	Endpoints    int // endpoints they spread over (default 100)
	Concurrency  int // sends in flight (default 256)
	PayloadBytes int // size of each event payload (default 512)
	// NaiveConcurrency bounds the naive worker, which holds a connection
	// per send (default 64).
	NaiveConcurrency int
	// NaiveDuration is how long the naive worker runs (default 10 s).
	NaiveDuration time.Duration
	// ReceiverDelay is how long the receiver takes to answer (default 0:
	// the CPU-bound case). Real partners take milliseconds to seconds.
	ReceiverDelay time.Duration
	// DatabaseURL, when set, is used instead of a private cluster (its
	// data is truncated). Leave empty for the published figures: a fresh
	// private cluster with fsync on.
	DatabaseURL string
	// Filter puts a payload filter on every endpoint, one every bench event
	// passes (so the same deliveries are queued), to measure what
	// evaluating filters at fan-out costs ingest.
	Filter bool
	// Spread subscribes each endpoint to its own event type
	// (conversion.<i>), so that an event queued with eventType(i) goes to
	// endpoint i only.
	Spread bool
	// CPUProfile, when set, receives a pprof CPU profile of the worker
	// phase alone.
	CPUProfile io.Writer
	// Processes adds the deployed topology to the run: hookline web,
	// hookline worker and the receiver each in a process of its own,
	// started from Executable (the hookline binary), the events queued
	// through the API (see processes).
	Processes  bool
	Executable string
	Logger     *slog.Logger
	// sender, when set, is the sender of the raw phase and of every
	// worker, kept from one to the next with its connections (the HTTPS
	// bench: a drain of deliveries over connections the warm-up opened).
	sender *sender.Sender
}

// Report holds one run's figures.
type Report struct {
	Options
	Raw, Worker, Bare, Naive Phase
	Ingest                   Phase // queueing the deliveries through the ingest statements
	// CPU time per request (raw) and per delivery (worker) of this process,
	// which holds the receiver too, and per delivery of the private
	// PostgreSQL cluster (0 with DatabaseURL).
	RawCPU, WorkerCPU, DatabaseCPU time.Duration
	// The same for the bare worker.
	BareCPU, BareDatabaseCPU time.Duration
	Deployed                 Deployed // with Options.Processes
}

// Phase is one measurement.
type Phase struct {
	Count    int
	Duration time.Duration
}

// PerSecond is the phase's throughput.
func (p Phase) PerSecond() float64 {
	if p.Duration <= 0 {
		return 0
	}
	return float64(p.Count) / p.Duration.Seconds()
}

func (o *Options) defaults() {
	if o.Deliveries <= 0 {
		o.Deliveries = 20000
	}
	if o.Endpoints <= 0 {
		o.Endpoints = 100
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 256
	}
	if o.PayloadBytes <= 0 {
		o.PayloadBytes = 512
	}
	if o.NaiveConcurrency <= 0 {
		o.NaiveConcurrency = 64
	}
	if o.NaiveDuration <= 0 {
		o.NaiveDuration = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Deliveries -= o.Deliveries % o.Endpoints // whole events × endpoints
}

// Run performs the measurements and writes a report to out.
func Run(ctx context.Context, o Options, out io.Writer) (Report, error) {
	o.defaults()
	r := Report{Options: o}
	if o.Processes && o.Executable == "" {
		return r, errors.New("the deployed topology needs the hookline executable (Options.Executable)")
	}

	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.NaiveConcurrency+8), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	pool, postmaster := bdb.pool, bdb.postmaster

	rcv, err := newReceiver(o.ReceiverDelay)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	guard := ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key, nil)
	payload := makePayload(o.PayloadBytes)

	fmt.Fprintf(out, "deliveries %d over %d endpoints, concurrency %d, payload %d B, receiver answers after %s\n",
		o.Deliveries, o.Endpoints, o.Concurrency, len(payload), o.ReceiverDelay)

	// 1. The ceiling: the same signed requests, no database. It is
	// measured before and after the worker, and the better of the two is
	// the ceiling: on a shared machine a neighbour's burst during one of
	// them must not flatter the ratio.
	c0 := sampleCPU(0)
	before, err := raw(ctx, guard, rcv, o, payload)
	if err != nil {
		return r, fmt.Errorf("raw: %w", err)
	}
	rawCPU := perItem(c0.self, sampleCPU(0).self, before.Count)

	// 2. hookline's worker.
	if err := seed(ctx, pool, box, rcv, o); err != nil {
		return r, err
	}
	if err := warmUp(ctx, pool, key, guard, rcv, o, payload); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	if r.Ingest, err = queue(ctx, pool, o, payload); err != nil {
		return r, fmt.Errorf("queue: %w", err)
	}
	r.Worker, r.WorkerCPU, r.DatabaseCPU, err = measured(postmaster, func(end func()) (Phase, error) {
		return runWorker(ctx, pool, key, guard, rcv, o, end)
	})
	if err != nil {
		return r, fmt.Errorf("worker: %w", err)
	}
	c2 := sampleCPU(0)
	after, err := raw(ctx, guard, rcv, o, payload)
	if err != nil {
		return r, fmt.Errorf("raw: %w", err)
	}
	r.Raw, r.RawCPU = before, rawCPU
	if after.PerSecond() > before.PerSecond() {
		r.Raw, r.RawCPU = after, perItem(c2.self, sampleCPU(0).self, after.Count)
	}
	fmt.Fprintf(out, "  raw loopback HTTP   %8.0f req/s  (best of %.0f before and %.0f after the worker)\n",
		r.Raw.PerSecond(), before.PerSecond(), after.PerSecond())
	fmt.Fprintf(out, "  hookline worker     %8.0f deliveries/s  (%.2f × raw)\n", r.Worker.PerSecond(), r.Worker.PerSecond()/r.Raw.PerSecond())
	printCPU(out, fmt.Sprintf("hookline process %.1f µs (raw: %.1f µs per request)", us(r.WorkerCPU), us(r.RawCPU)), r.DatabaseCPU)

	// 3. The bare batched worker on the same queue, re-queued.
	if err := reset(ctx, pool); err != nil {
		return r, err
	}
	if _, err := queue(ctx, pool, o, payload); err != nil {
		return r, err
	}
	urls, err := endpointURLs(ctx, pool)
	if err != nil {
		return r, err
	}
	r.Bare, r.BareCPU, r.BareDatabaseCPU, err = measured(postmaster, func(func()) (Phase, error) {
		return bare(ctx, pool, guard, rcv, o, urls) // on the bench's pool, whose sessions stay
	})
	if err != nil {
		return r, fmt.Errorf("bare: %w", err)
	}
	fmt.Fprintf(out, "  bare batched worker %8.0f deliveries/s  (%.2f × raw; hookline = %.2f × bare)\n",
		r.Bare.PerSecond(), r.Bare.PerSecond()/r.Raw.PerSecond(), r.Worker.PerSecond()/r.Bare.PerSecond())
	printCPU(out, fmt.Sprintf("bare process %.1f µs", us(r.BareCPU)), r.BareDatabaseCPU)

	// 4. The naive worker on the same queue, re-queued.
	if err := reset(ctx, pool); err != nil {
		return r, err
	}
	if _, err := queue(ctx, pool, o, payload); err != nil {
		return r, err
	}
	if r.Naive, err = naive(ctx, pool, guard, rcv, o); err != nil {
		return r, fmt.Errorf("naive: %w", err)
	}
	fmt.Fprintf(out, "  naive one-row       %8.0f deliveries/s  (hookline = %.1f × naive)\n", r.Naive.PerSecond(), r.Worker.PerSecond()/r.Naive.PerSecond())
	filtered := ""
	if o.Filter {
		filtered = "  (payload filter on every endpoint)"
	}
	fmt.Fprintf(out, "  ingest (batch API statements) %8.0f deliveries queued/s%s\n", r.Ingest.PerSecond(), filtered)

	// 5. The deployed topology, on the same database, last: its processes
	// must not run beside the in-process phases.
	if o.Processes {
		if r.Deployed, err = processes(ctx, bdb, o, r.Worker, out); err != nil {
			return r, fmt.Errorf("deployed topology: %w", err)
		}
	}
	return r, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// measured runs one worker phase and returns, with its result, the CPU
// time per delivery of this process and of the private cluster (0 when the
// cluster's processes are not known). run calls end once its work is done
// and before it stops anything: a PostgreSQL backend that exits takes its
// CPU time with it, and hookline's worker closes its own sessions when it
// stops, the one its claims run on among them (a third of the cluster's CPU
// in a drain; sampled after the stop, it was counted in some runs and not
// in others). A run that never calls it ends when it returns.
func measured(postmaster int, run func(end func()) (Phase, error)) (p Phase, self, database time.Duration, err error) {
	c1 := sampleCPU(postmaster)
	var c2 cpuSample
	ended := false
	end := func() {
		if !ended {
			c2, ended = sampleCPU(postmaster), true
		}
	}
	if p, err = run(end); err != nil {
		return p, 0, 0, err
	}
	end()
	self = perItem(c1.self, c2.self, p.Count)
	if c1.dbOK && c2.dbOK {
		database = perItem(c1.db, c2.db, p.Count)
	}
	return p, self, database, nil
}

// printCPU prints a CPU-per-delivery line, with PostgreSQL's share when known.
func printCPU(out io.Writer, process string, database time.Duration) {
	line := "  CPU per delivery    " + process
	if database > 0 {
		line += fmt.Sprintf(", PostgreSQL %.1f µs", us(database))
	}
	fmt.Fprintln(out, line)
}

func makePayload(n int) []byte {
	base := `{"type":"conversion.approved","click_id":"c-0123456789","payout":12.50,"currency":"USD","pad":"`
	pad := max(n-len(base)-2, 0)
	return []byte(base + strings.Repeat("x", pad) + `"}`)
}

// receiver is the loopback partner: it reads the body and answers 200.
// GET receiverCountPath answers with the requests counted so far, for a
// bench whose receiver runs in another process (Sink).
type receiver struct {
	srv   *http.Server
	url   string
	count atomic.Int64
	tls   *receiverTLS // nil: plain HTTP
}

const receiverCountPath = "/_bench/count"

func newReceiver(delay time.Duration) (*receiver, error) {
	return listenReceiver("127.0.0.1:0", delay)
}

func listenReceiver(addr string, delay time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &receiver{}
	serveReceiver(r, ln, receiverHandler(r, delay), nil, false)
	return r, nil
}

// receiverHandler answers as the drain's receiver does.
func receiverHandler(r *receiver, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == receiverCountPath {
			_, _ = io.WriteString(w, strconv.FormatInt(r.count.Load(), 10))
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		r.count.Add(1)
		w.WriteHeader(http.StatusOK)
	})
}

func (r *receiver) close() { _ = r.srv.Close() }

func raw(ctx context.Context, guard *ssrf.Guard, rcv *receiver, o Options, payload []byte) (Phase, error) {
	s := o.sender
	if s == nil {
		var err error
		if s, err = sender.New(sender.Options{Guard: guard, UserAgent: "hookline/bench", MaxIdleConnsPerHost: o.Concurrency}); err != nil {
			return Phase{}, err
		}
		defer s.Close()
	}
	keys := [][]byte{make([]byte, 32)}
	trust := rcv.egress()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range o.Concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(o.Deliveries) || ctx.Err() != nil {
					return
				}
				h := http.Header{}
				h.Set("Content-Type", "application/json")
				signing.Headers(h, keys, fmt.Sprint("ev-", i), time.Now(), payload)
				res := s.Send(ctx, sender.Request{Method: "POST", URL: fmt.Sprintf("%s/ep%d", rcv.url, i%int64(o.Endpoints)), Header: h, Body: payload, Timeout: 15 * time.Second, Egress: trust})
				if res.Outcome != sender.OK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if n := failed.Load(); n > 0 {
		return Phase{}, fmt.Errorf("%d raw requests failed", n)
	}
	return Phase{Count: o.Deliveries, Duration: d}, ctx.Err()
}

// benchFilter is the filter Options.Filter puts on endpoint i: four
// conditions of the common kinds (equality, numeric comparison, list
// membership, inequality) that every bench payload passes. Each endpoint's
// differs (the last condition names it), so none is evaluated once for
// several endpoints: the worst case for fan-out.
func benchFilter(i int) string {
	return fmt.Sprintf(`{"type": "conversion.approved", "payout": {"$gte": 1}, "currency": {"$in": ["USD", "EUR", "BRL"]}, "click_id": {"$ne": "ep%d"}}`, i)
}

// seed creates the partner and endpoints (all subscribed to every type).
func seed(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, rcv *receiver, o Options) error {
	if _, err := pool.Exec(ctx, "TRUNCATE partners, endpoints, endpoint_secrets, endpoint_health, events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	q := db.New(pool)
	p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "bench"})
	if err != nil {
		return err
	}
	for i := range o.Endpoints {
		var flt []byte
		if o.Filter {
			flt = []byte(benchFilter(i))
		}
		types := []string{}
		if o.Spread {
			types = []string{eventType(i)}
		}
		e, err := q.EndpointCreate(ctx, db.EndpointCreateParams{
			Filter:    flt,
			PartnerID: p.ID, Name: fmt.Sprint("ep", i), Kind: "webhook", URL: fmt.Sprintf("%s/ep%d", rcv.url, i),
			Method: "POST", EventTypes: types, Headers: json.RawMessage(`{}`), MaxAttempts: 5, TimeoutMs: 15000,
			MaxInFlight: int32(max(8, 2*o.Concurrency/o.Endpoints)), FailureThreshold: 10, Enabled: true,
		})
		if err != nil {
			return err
		}
		if err := q.EndpointHealthCreate(ctx, e.ID); err != nil {
			return err
		}
		if rcv.tls != nil {
			// What POST /api/v1/endpoints stores for an egress object
			// with a ca_bundle and nothing else.
			if _, err := q.EndpointEgressSet(ctx, db.EndpointEgressSetParams{
				EndpointID: e.ID, CaBundle: string(rcv.tls.caPEM), AuthKind: egress.AuthNone, OauthScopes: []string{},
			}); err != nil {
				return err
			}
		}
		secret, _ := signing.NewSecret(rand.Reader)
		sealed, _ := box.Seal(e.ID, []byte(secret))
		if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: e.ID, Ciphertext: sealed}); err != nil {
			return err
		}
	}
	return nil
}

// queue stores events and fans them out with the ingest path's statements
// and its filter evaluation (web's storeEvents), in batches of 1000 events
// like POST /api/v1/events/batch.
func queue(ctx context.Context, pool *pgxpool.Pool, o Options, payload []byte) (Phase, error) {
	events := o.Deliveries / o.Endpoints
	start := time.Now()
	var cache filter.Cache
	for done := 0; done < events; done += 1000 {
		n := min(1000, events-done)
		err := withConn(ctx, pool, func(conn *pgxpool.Conn) error {
			_, err := ingest(ctx, conn, &cache, n, payload, nil, nil)
			return err
		})
		if err != nil {
			return Phase{}, err
		}
	}
	d := time.Since(start)
	// Fresh statistics, as autovacuum would have by the time a real queue
	// builds up.
	_, err := pool.Exec(ctx, "ANALYZE deliveries; ANALYZE events; ANALYZE endpoints; ANALYZE endpoint_health")
	return Phase{Count: o.Deliveries, Duration: d}, err
}

// ingest stores n events and their fan-out on conn in one transaction the
// way POST /api/v1/events/batch does (web's storeEvents): BEGIN, the
// endpoints' filters and the insert batch in one round trip, the fan-out
// batch, NOTIFY and COMMIT in another (db.TxPipeline). It returns the
// events' ids once committed.
//
// typeOf names the i-th event's type; nil gives every event the one type
// all endpoints of a fan-out bench take. local is the worker of the same
// process, as hookline serve's ingest has it (web.Config.Worker), or nil:
// once committed it is woken for the endpoints queued for, and while it
// claims from every shard the fan-out sends no NOTIFY.
func ingest(ctx context.Context, conn *pgxpool.Conn, cache *filter.Cache, n int, payload []byte, typeOf func(i int) string, local localWorker) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, n)
	types := make([]string, n)
	ev := make([]db.NewEvent, n)
	for i := range n {
		ids[i], _ = uuid.NewV7()
		types[i] = "conversion.approved"
		if typeOf != nil {
			types[i] = typeOf(i)
		}
		ev[i] = db.NewEvent{ID: ids[i], Type: types[i], Payload: payload}
	}
	tx := db.NewTxPipeline(conn)
	qt := db.New(tx)
	var rows []db.EndpointFiltersRow
	tx.EndpointFiltersWithNextBatch(&rows)
	var berr error
	qt.EventInsertSet(ctx, db.EventSet(ev)).Query(func(_ int, _ []uuid.UUID, err error) { berr = errors.Join(berr, err) })
	if berr = errors.Join(berr, tx.Err()); berr != nil {
		tx.Rollback(ctx)
		return nil, berr
	}
	filters := make([]filter.Endpoint, len(rows))
	for i, r := range rows {
		f, err := cache.Compile(r.Filter)
		if err != nil {
			tx.Rollback(ctx)
			return nil, err
		}
		filters[i] = filter.Endpoint{ID: r.ID, Filter: f}
	}
	fan := make([]db.FanOutEvent, n)
	for i := range n {
		fan[i] = db.FanOutEvent{ID: ids[i], Type: types[i], Excluded: filter.Rejecting(filters, payload)}
	}
	tx.CommitWithNextBatch()
	notify := local == nil || !local.ClaimsEverything()
	var queuedFor []int64
	seen := map[int64]bool{}
	qt.DeliveryFanOut(ctx, db.FanOut(fan, notify)).Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
		berr = errors.Join(berr, err)
		for _, r := range rows {
			if !seen[r.EndpointID] {
				seen[r.EndpointID] = true
				queuedFor = append(queuedFor, r.EndpointID)
			}
		}
	})
	if berr = errors.Join(berr, tx.Err()); berr != nil || !tx.Committed() {
		tx.Rollback(ctx)
		return nil, errors.Join(berr, tx.Commit(ctx))
	}
	if local != nil && len(queuedFor) > 0 {
		local.WakeFor(queuedFor...)
	}
	return ids, nil
}

// localWorker is web.LocalWorker: the worker an in-process ingest wakes.
type localWorker interface {
	ClaimsEverything() bool
	WakeFor(endpointIDs ...int64)
}

// withConn runs fn on a connection of pool's.
func withConn(ctx context.Context, pool *pgxpool.Pool, fn func(*pgxpool.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return fn(conn)
}

// eventType is the event type endpoint i alone takes in a spread bench.
func eventType(i int) string { return "conversion." + strconv.Itoa(i) }

// warmUp drains a small queue with hookline's worker, untimed, and empties
// the tables again. The first phase on a fresh cluster pays for what later
// ones find ready: new WAL segment files, cold caches, first plans. Run
// first, the bare worker spent 68-71 µs of PostgreSQL CPU per delivery
// against 46-60 µs when it ran after hookline's worker; the phases measured
// here should all find the database as a running service does.
func warmUp(ctx context.Context, pool *pgxpool.Pool, key []byte, guard *ssrf.Guard, rcv *receiver, o Options, payload []byte) error {
	w := o
	w.Deliveries = max(o.Endpoints, min(o.Deliveries/4, 5000))
	w.Deliveries -= w.Deliveries % o.Endpoints
	w.CPUProfile = nil
	if _, err := queue(ctx, pool, w, payload); err != nil {
		return err
	}
	if _, err := runWorker(ctx, pool, key, guard, rcv, w, func() {}); err != nil {
		return err
	}
	return reset(ctx, pool)
}

func reset(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "TRUNCATE events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "UPDATE endpoint_health SET state = 'closed', consecutive_failures = 0")
	return err
}

func remaining(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE status <> 'delivered'").Scan(&n)
	return n, err
}

// runWorker drains the queue with the real worker and times it from start
// until no undelivered row is left, and calls end then, before it stops
// the worker.
func runWorker(ctx context.Context, pool *pgxpool.Pool, key []byte, guard *ssrf.Guard, rcv *receiver, o Options, end func()) (Phase, error) {
	target := rcv.count.Load() + int64(o.Deliveries)
	w, err := worker.New(worker.Config{
		Pool: pool, SecretKey: key, Guard: guard, UserAgent: "hookline/bench",
		Concurrency: o.Concurrency, Logger: o.Logger, Sender: o.sender,
	})
	if err != nil {
		return Phase{}, err
	}
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return Phase{}, err
		}
		defer pprof.StopCPUProfile()
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(wctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for {
		// Counting rows costs the database; only once every request has
		// arrived is it worth asking whether all results are recorded.
		if rcv.count.Load() >= target {
			n, err := remaining(ctx, pool)
			if err != nil {
				return Phase{}, err
			}
			if n == 0 {
				p := Phase{Count: o.Deliveries, Duration: time.Since(start)}
				end() // before the deferred stop closes the worker's sessions
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return Phase{}, ctx.Err()
		case err := <-done:
			return Phase{}, fmt.Errorf("worker stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
