package bench

// Long file: the steady-rate bench: pacing, the timing receiver and the report are one measurement.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
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
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

// SteadyOptions of a steady-rate run: events are queued at a fixed rate
// while hookline's worker delivers them, and the run reports how long each
// delivery waited, not how fast a backlog drains.
type SteadyOptions struct {
	Rate     int           // events per second (required)
	Duration time.Duration // measured posting time (required)
	// Warmup is posted at the same rate before the measured window and
	// left out of every figure (default a fifth of Duration, at most 2 s).
	Warmup    time.Duration
	Endpoints int // endpoints every event fans out to (default 100)
	// Spread sends each event to one endpoint, in turn, instead of to
	// every endpoint: deliveries per second equal events per second.
	Spread        bool
	Batch         int // events per ingest transaction (default 10)
	Concurrency   int // the worker's sends in flight (default 256)
	PayloadBytes  int // event payload size (default 512)
	ReceiverDelay time.Duration
	// Ingesters bounds the ingest transactions in flight, as concurrent API
	// requests would (default 8). When all are busy the pacing loop waits
	// and the ticks it misses are not made up: the achieved rate shows it.
	Ingesters   int
	DatabaseURL string // as Options.DatabaseURL
	Logger      *slog.Logger
	// Soak, when set, makes the run a soak: figures are reported for every
	// Soak of the window (see soak.go) and no per-delivery state is kept
	// in this process, whose memory is part of what a soak watches.
	Soak time.Duration
	// RetainDelivered, in a soak, keeps delivered deliveries and their
	// events this long instead of seven days, so the worker's retention
	// passes (paced as deployed) delete within the soak and its
	// table sizes can level off. It must be at least three intervals:
	// each interval's latencies are also read during the run (unless
	// NoLiveReads), two intervals after it began, before retention can
	// take its rows.
	RetainDelivered time.Duration
	// NoLiveReads, in a soak with RetainDelivered, leaves out the reads of
	// each second's enqueue-to-first-attempt latencies during the run
	// (readBehind), whose cost to PostgreSQL grew through a soak (one read
	// a second at 1,500 deliveries/s: 5.7-6.2 ms each through the first
	// minute, 6.6-10.5 ms after). The intervals retention has taken by the
	// run's end then report no enqueue-to-first-attempt latencies; the
	// receiver's (event created to request received) need no read.
	NoLiveReads bool
	// Timeline, when set, receives the run's latency second by second as
	// CSV, measured at the receiver (see timeline.go), from the measured
	// window's start (a soak's first interval) to the end of the drain.
	Timeline io.Writer
	// retentionEvery overrides the worker's retention period (tests).
	retentionEvery time.Duration
	// tls, when set, makes the receiver speak TLS, trusted through each
	// endpoint's CA bundle (the HTTPS bench).
	tls *receiverTLS
}

// Percentiles of a latency distribution.
type Percentiles struct {
	Count              int
	P50, P95, P99, Max time.Duration
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	at := func(q float64) time.Duration { // nearest rank
		i := int(q*float64(len(d))+0.999999) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	return Percentiles{Count: len(d), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: d[len(d)-1]}
}

func (p Percentiles) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s  (%d deliveries)", ms(p.P50), ms(p.P95), ms(p.P99), ms(p.Max), p.Count)
}

// SteadyReport holds a steady-rate run's figures. Everything but
// WarmupEvents covers the measured window only.
type SteadyReport struct {
	SteadyOptions
	WarmupEvents int
	Events       int           // events queued in the measured window
	Deliveries   int           // their deliveries (events × endpoints)
	Delivered    int           // of those, delivered (all, unless the run failed)
	Window       time.Duration // from the window's first tick to its last commit
	// AchievedRate is Events / Window, against the Rate asked for.
	AchievedRate float64
	// EnqueueToAttempt is, per delivery, its event's created_at (the
	// ingest transaction's start) to the start of its first attempt.
	EnqueueToAttempt Percentiles
	// CommitToAttempt is, per delivery, the return of its ingest
	// transaction's commit to the start of its first attempt: the worker's
	// share of EnqueueToAttempt (the rest is the ingest transaction). It
	// can be negative when the worker starts before the commit's answer
	// reaches the poster.
	CommitToAttempt Percentiles
	// EnqueueToCommit is, per event, its created_at to the return of its
	// ingest transaction's commit: the ingest's share.
	EnqueueToCommit Percentiles
	// IngestCall is, per batch, the whole ingest call as its poster sees
	// it: from the call (before the endpoints' filters are read and the
	// transaction begins) to the commit's return.
	IngestCall Percentiles
	// IngestToReceipt is, per delivery, its event's created_at to the
	// request's arrival at the receiver (first arrival per webhook-id and
	// endpoint).
	IngestToReceipt Percentiles
	// Backlog samples the undelivered deliveries (pending, failed or in
	// flight) once a second through the measured window.
	BacklogFirst, BacklogMax, BacklogLast int
	Backlog                               []int // every sample
	// BacklogGrew: the last sample exceeds the first by more than a
	// second's deliveries, and the backlog rose in at least three
	// quarters of the seconds (a queue that swings with the machine's
	// load and comes back is not growing).
	BacklogGrew bool
	// Intervals is a soak's report, one entry per SteadyOptions.Soak.
	Intervals []SoakInterval
	// Sends counts the requests that reached the receiver in each second
	// of the window (warm-up deliveries included): the worker's throughput
	// second by second.
	Sends []int
	// DrainSends is the same for each whole second after the last post.
	DrainSends         []int
	SendsMin, SendsMax int
	// Drain is how long after the last post every delivery was recorded.
	Drain time.Duration
}

func (o *SteadyOptions) defaults() {
	if o.Endpoints <= 0 {
		o.Endpoints = 100
	}
	if o.Batch <= 0 {
		o.Batch = 10
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 256
	}
	if o.PayloadBytes <= 0 {
		o.PayloadBytes = 512
	}
	if o.Ingesters <= 0 {
		o.Ingesters = 8
	}
	if o.Warmup <= 0 {
		o.Warmup = min(2*time.Second, o.Duration/5)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// arrivals records when each (webhook-id, path) first reached the receiver.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) add(id, path string, t time.Time) {
	if a == nil { // a soak keeps no per-delivery state
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := id + " " + path
	if _, ok := a.at[k]; !ok {
		a.at[k] = t
	}
}

func (a *arrivals) get(id, path string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id+" "+path]
	return t, ok
}

// newTimingReceiver is the loopback partner of newReceiver that also
// notes each request's arrival time under its webhook-id.
// With t it speaks TLS.
func newTimingReceiver(delay time.Duration, arr *arrivals, tl *timeline, t *receiverTLS) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{}
	serveReceiver(r, ln, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		_, _ = io.Copy(io.Discard, req.Body)
		arr.add(req.Header.Get(signing.HeaderID), req.URL.Path, now)
		tl.add(req.Header.Get(signing.HeaderID), now)
		if delay > 0 {
			time.Sleep(delay)
		}
		r.count.Add(1)
		w.WriteHeader(http.StatusOK)
	}), t, false)
	return r, nil
}

// Steady queues events at o.Rate per second, in transactions of o.Batch
// events through the batch API's ingest statements, while hookline's worker
// delivers them to a loopback receiver; it writes a report to out.
func Steady(ctx context.Context, o SteadyOptions, out io.Writer) (SteadyReport, error) {
	o.defaults()
	r := SteadyReport{SteadyOptions: o}
	if o.Rate <= 0 || o.Duration <= 0 {
		return r, errors.New("steady: rate and duration must be positive")
	}
	if o.RetainDelivered > 0 && (o.Soak == 0 || o.RetainDelivered < 3*o.Soak) {
		return r, errors.New("steady: RetainDelivered needs a soak and at least three of its intervals")
	}

	bdb, err := openBenchDB(ctx, o.DatabaseURL, "", int32(o.Ingesters+24), o.Logger, out)
	if err != nil {
		return r, err
	}
	defer bdb.close()
	pool := bdb.pool

	var arr *arrivals
	if o.Soak == 0 {
		arr = &arrivals{at: map[string]time.Time{}}
	}
	// A soak reads each interval's per-second p99s from the timeline,
	// written out only when asked for.
	var tl *timeline
	if o.Timeline != nil || o.Soak > 0 {
		tl = &timeline{}
	}
	rcv, err := newTimingReceiver(o.ReceiverDelay, arr, tl, o.tls)
	if err != nil {
		return r, err
	}
	defer rcv.close()
	guard := ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key, nil)
	payload := makePayload(o.PayloadBytes)
	if err := seed(ctx, pool, box, rcv, Options{Endpoints: o.Endpoints, Concurrency: o.Concurrency, Spread: o.Spread}); err != nil {
		return r, err
	}

	fanout, each := o.Endpoints, "×"
	if o.Spread {
		fanout, each = 1, "spread over"
	}
	fmt.Fprintf(out, "steady rate %d events/s %s %d endpoints for %s (after a %s warm-up), batches of %d, payload %d B, receiver answers after %s\n",
		o.Rate, each, o.Endpoints, o.Duration, o.Warmup, o.Batch, len(payload), o.ReceiverDelay)

	w, err := worker.New(worker.Config{
		Pool: pool, Box: box, Guard: guard, UserAgent: "hookline/bench",
		Concurrency: o.Concurrency, Logger: o.Logger,
		Retention: worker.Retention{Delivered: o.RetainDelivered, Every: o.retentionEvery},
	})
	if err != nil {
		return r, err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		<-workerDone
	}()

	windowStart := time.Now().Add(o.Warmup)
	if tl != nil {
		tl.begin(windowStart)
	}
	var soak *soakSampler
	if o.Soak > 0 {
		soak = startSoakSampler(ctx, pool, bdb.postmaster, o.Soak, windowStart, o.Warmup, rcv.count.Load, o.RetainDelivered > 0 && !o.NoLiveReads)
	}
	measured, warm, window, err := pace(ctx, pool, o, payload, rcv.count.Load, w)
	if soak != nil {
		soak.stop()
	}
	if err != nil {
		return r, err
	}
	postedAt := time.Now()
	r.WarmupEvents, r.Events, r.Window = warm, measured.events, window.end.Sub(window.start)
	r.Deliveries = r.Events * fanout
	r.AchievedRate = float64(r.Events) / r.Window.Seconds()
	if len(measured.backlog) > 0 {
		r.BacklogFirst, r.BacklogLast = measured.backlog[0], measured.backlog[len(measured.backlog)-1]
		r.BacklogMax = slices.Max(measured.backlog)
	}
	r.Backlog, r.Sends = measured.backlog, measured.sends
	if len(measured.sends) > 0 {
		r.SendsMin, r.SendsMax = slices.Min(measured.sends), slices.Max(measured.sends)
	}

	// Wait until every delivery queued (warm-up included) is recorded.
	target := int64(warm+r.Events) * int64(fanout)
	deadline := time.Now().Add(10*time.Minute + o.Duration)
	secAt, secCount := time.Now(), rcv.count.Load()
	for {
		if now := time.Now(); now.Sub(secAt) >= time.Second {
			n := rcv.count.Load()
			r.DrainSends = append(r.DrainSends, int(n-secCount))
			secAt, secCount = now, n
		}
		if rcv.count.Load() >= target {
			n, err := remaining(ctx, pool)
			if err != nil {
				return r, err
			}
			if n == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("steady: %d of %d requests arrived; the queue did not drain", rcv.count.Load(), target)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case err := <-workerDone:
			workerDone <- err
			return r, fmt.Errorf("worker stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.Drain = time.Since(postedAt)
	if o.Timeline != nil {
		if err := tl.write(o.Timeline); err != nil {
			return r, fmt.Errorf("write the timeline: %w", err)
		}
	}
	if soak != nil {
		return r, soak.report(ctx, pool, tl, &r, out)
	}

	rows, err := pool.Query(ctx, `
		SELECT d.event_id, e.name, ev.created_at, min(a.started_at)
		FROM deliveries d
		JOIN events ev ON ev.id = d.event_id
		JOIN endpoints e ON e.id = d.endpoint_id
		JOIN delivery_attempts a ON a.delivery_id = d.id
		WHERE d.event_id = ANY($1) AND d.status = 'delivered'
		GROUP BY d.id, d.event_id, e.name, ev.created_at`, measured.ids)
	if err != nil {
		return r, err
	}
	var toAttempt, toReceipt, fromCommit, toCommit []time.Duration
	counted := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		var name string
		var created, first time.Time
		if err := rows.Scan(&id, &name, &created, &first); err != nil {
			rows.Close()
			return r, err
		}
		toAttempt = append(toAttempt, first.Sub(created))
		fromCommit = append(fromCommit, first.Sub(measured.committed[id]))
		if !counted[id] {
			counted[id] = true
			toCommit = append(toCommit, measured.committed[id].Sub(created))
		}
		if at, ok := arr.get(id.String(), "/"+name); ok {
			toReceipt = append(toReceipt, at.Sub(created))
		}
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	r.Delivered = len(toAttempt)
	r.EnqueueToAttempt, r.IngestToReceipt = percentiles(toAttempt), percentiles(toReceipt)
	r.CommitToAttempt = percentiles(fromCommit)
	r.EnqueueToCommit = percentiles(toCommit)
	r.IngestCall = percentiles(measured.calls)
	if r.Delivered != r.Deliveries || r.IngestToReceipt.Count != r.Deliveries {
		return r, fmt.Errorf("steady: %d deliveries queued, %d recorded as delivered, %d matched at the receiver", r.Deliveries, r.Delivered, r.IngestToReceipt.Count)
	}

	fmt.Fprintf(out, "  events queued       %8d  (%d deliveries; %d more events in the warm-up)\n", r.Events, r.Deliveries, r.WarmupEvents)
	fmt.Fprintf(out, "  achieved rate       %8.0f events/s  (%.0f deliveries/s; asked %d)\n", r.AchievedRate, r.AchievedRate*float64(fanout), o.Rate)
	fmt.Fprintf(out, "  enqueue → 1st attempt  %s\n", r.EnqueueToAttempt)
	fmt.Fprintf(out, "    ingest: created_at to the commit's return  %s\n", r.EnqueueToCommit)
	fmt.Fprintf(out, "    worker: the commit's return to the attempt  %s\n", r.CommitToAttempt)
	fmt.Fprintf(out, "  ingest call, each batch from the call to the commit's return  %s\n", strings.Replace(r.IngestCall.String(), "deliveries)", "batches)", 1))
	fmt.Fprintf(out, "  ingest → receipt       %s\n", r.IngestToReceipt)
	rises := 0
	for i := 1; i < len(r.Backlog); i++ {
		if r.Backlog[i] > r.Backlog[i-1] {
			rises++
		}
	}
	r.BacklogGrew = backlogGrew(r.Backlog, o.Rate*fanout)
	grew := fmt.Sprintf("rose in %d of %d seconds: ", rises, max(len(r.Backlog)-1, 0))
	if r.BacklogGrew {
		grew += "GREW, the worker fell behind this rate"
	} else {
		grew += "no steady growth"
	}
	fmt.Fprintf(out, "  backlog (undelivered, each second) first %d, max %d, last %d: %s\n", r.BacklogFirst, r.BacklogMax, r.BacklogLast, grew)
	fmt.Fprintf(out, "    each second: %s\n", joinInts(r.Backlog))
	fmt.Fprintf(out, "  sent each second (requests/s) min %d, max %d: %s\n", r.SendsMin, r.SendsMax, joinInts(r.Sends))
	fmt.Fprintf(out, "  drained %.1f s after the last post", r.Drain.Seconds())
	if len(r.DrainSends) > 0 {
		fmt.Fprintf(out, "; requests/s meanwhile: %s", joinInts(r.DrainSends))
	}
	fmt.Fprintln(out)
	return r, nil
}

type paced struct {
	events    int                     // events queued in the measured window
	ids       []uuid.UUID             // the events (not kept by a soak)
	committed map[uuid.UUID]time.Time // when each one's transaction returned
	calls     []time.Duration         // each measured batch's ingest call, start to commit
	backlog   []int                   // undelivered deliveries, each second of the window
	sends     []int                   // requests that reached the receiver in each second of it
}

// pace queues o.Batch events per tick of a ticker set to o.Rate events a
// second, for o.Warmup and then o.Duration. Each batch is its own
// transaction on one of o.Ingesters goroutines; a tick that finds them all
// busy waits, and the ticks it misses are dropped rather than posted in a
// burst later, so the achieved rate falls instead of the spacing. local is
// the worker each batch wakes, as hookline serve's ingest does.
func pace(ctx context.Context, pool *pgxpool.Pool, o SteadyOptions, payload []byte, sent func() int64, local localWorker) (m paced, warm int, window struct{ start, end time.Time }, err error) {
	interval := time.Duration(float64(time.Second) * float64(o.Batch) / float64(o.Rate))
	// With Spread, events take the endpoints' types in turn, across
	// batches.
	var typeOf func(int) string
	if o.Spread {
		var next atomic.Int64
		typeOf = func(int) string { return eventType(int(next.Add(1)-1) % o.Endpoints) }
	}
	m.committed = map[uuid.UUID]time.Time{}
	var cache filter.Cache
	sem := make(chan struct{}, o.Ingesters)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	var lastCommit time.Time

	// The backlog and the requests sent, once a second through the
	// measured window. A soak reports neither second by second, and reads
	// no backlog: that count cost PostgreSQL 0.2 ms through a soak's first
	// minute and up to 7.8 ms after (pg_stat_statements, 1,500
	// deliveries/s), every second, work the soak measured as its own.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan paced, 1)
	sampleFrom := make(chan struct{})

	start := time.Now()
	measureAt := start.Add(o.Warmup)
	end := measureAt.Add(o.Duration)
	go func() {
		var s paced
		defer func() { sampled <- s }()
		select {
		case <-sampleFrom:
		case <-sampleCtx.Done():
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		prev := sent()
		for first := true; ; first = false {
			if !first {
				n := sent()
				s.sends = append(s.sends, int(n-prev))
				prev = n
			}
			if o.Soak == 0 {
				// The posts tick at a fixed phase to this ticker, so the
				// backlog is read at a random point between two of them:
				// read on the tick it would always find the batch just
				// posted not yet queued and the one before already sent.
				select {
				case <-sampleCtx.Done():
					return
				case <-time.After(time.Duration(mrand.Int64N(int64(min(interval, 500*time.Millisecond)) + 1))):
				}
				// Counted through the partial indexes that hold exactly
				// these rows: one count over the statuses is a scan of the
				// whole table, which in a soak reached 0.3–0.6 s of two
				// cores' time every second and grew with the table.
				var n int
				if err := pool.QueryRow(sampleCtx, `SELECT (SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed'))
					+ (SELECT count(*) FROM deliveries WHERE status = 'in_flight')`).Scan(&n); err == nil {
					s.backlog = append(s.backlog, n)
				}
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	inWindow := false
	tick := start
	for {
		if !inWindow && !tick.Before(measureAt) {
			inWindow = true
			window.start = tick
			close(sampleFrom)
		}
		measuredBatch := inWindow
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			posted := time.Now()
			ids, err := ingestBatch(ctx, pool, &cache, o.Batch, payload, typeOf, local)
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			if measuredBatch {
				m.events += len(ids)
				// A soak reports by interval from the tables, and keeps
				// nothing per call or event: its RSS is the worker's, not
				// a record growing with the traffic.
				if o.Soak == 0 {
					m.calls = append(m.calls, at.Sub(posted))
					m.ids = append(m.ids, ids...)
					for _, id := range ids {
						m.committed[id] = at
					}
				}
				if at.After(lastCommit) {
					lastCommit = at
				}
			} else {
				warm += len(ids)
			}
		})
		select {
		case tick = <-ticker.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil || !tick.Before(end) {
			break
		}
	}
	wg.Wait()
	stopSampling()
	series := <-sampled
	m.backlog, m.sends = series.backlog, series.sends
	// The window spans whole ticks, from its first to the one that ended
	// it, or to the last commit if that came later.
	window.end = tick
	if lastCommit.After(tick) {
		window.end = lastCommit
	}
	if err == nil {
		err = firstErr
	}
	if err == nil && !inWindow {
		err = errors.New("steady: nothing was posted in the measured window")
	}
	return m, warm, window, err
}

func cmpErr(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}

// ingestBatch stores n events and their fan-out in one transaction with
// the statements POST /api/v1/events/batch runs (web's storeEvents: the
// insert batch, the endpoints' filters, the fan-out batch, the wake-up of
// local or the NOTIFY).
func ingestBatch(ctx context.Context, pool *pgxpool.Pool, cache *filter.Cache, n int, payload []byte, typeOf func(int) string, local localWorker) ([]uuid.UUID, error) {
	if typeOf != nil { // the types taken once: a batch stored again keeps its own
		types := make([]string, n)
		for i := range types {
			types[i] = typeOf(i)
		}
		typeOf = func(i int) string { return types[i] }
	}
	var ids []uuid.UUID
	err := withConn(ctx, pool, func(conn *pgxpool.Conn) error {
		var err error
		for range 3 { // as storeEvents, again when a partition of events was made meanwhile
			if ids, err = ingest(ctx, conn, cache, n, payload, typeOf, local); !db.RoutedToDefault(err) {
				break
			}
		}
		return err
	})
	return ids, err
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

func backlogGrew(samples []int, perSecond int) bool {
	if len(samples) < 2 || samples[len(samples)-1] <= samples[0]+perSecond {
		return false
	}
	rises := 0
	for i := 1; i < len(samples); i++ {
		if samples[i] > samples[i-1] {
			rises++
		}
	}
	return 4*rises >= 3*(len(samples)-1)
}
