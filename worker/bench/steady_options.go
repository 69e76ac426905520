package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// on, box and reseat, when set (the scale bench), are the database to
	// run on, open and seeded already (it is not closed here), the box its
	// endpoints' secrets are sealed with, and what points its endpoints at
	// the run's receiver instead of seeding them.
	on     *benchDB
	box    *secretbox.Box
	reseat func(ctx context.Context, pool *pgxpool.Pool, rcv *receiver) error
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
	loadDefaults(&o.Endpoints, &o.Concurrency, &o.PayloadBytes, &o.Logger)
	setDefault(&o.Batch, 10)
	setDefault(&o.Ingesters, 8)
	setDefault(&o.Warmup, min(2*time.Second, o.Duration/5))
}
