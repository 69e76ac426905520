// Package worker is hookline's delivery engine. It claims due deliveries
// from the PostgreSQL queue (by reading them, from the shards of endpoints
// it owns), sends them concurrently as signed webhooks or postbacks,
// records every attempt in batches, retries transient failures with
// full-jitter backoff, runs the per-endpoint circuit breaker, and
// aggregates latency telemetry. Several replicas may run against one
// database: each endpoint is owned by one of them at a time, so claims
// never overlap, and every state change that could race is a conditional
// update.
//
// The policies it applies are the pure packages beside it (backoff, breaker,
// ratelimit, latency, signing, postback, ssrf, sender, request); this
// package is the loop that wires them to the database.
package worker

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/ratelimit"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// Config wires a Worker. Pool, Guard, and Box or SecretKey are required.
type Config struct {
	Pool *pgxpool.Pool
	// SessionPool is where the worker's sessions are opened (its liveness
	// and ownership session, which runs the claims, and its LISTEN) and
	// its retention pass holds its session lock: connections that keep
	// their server session. Pool when nil; set apart when Pool goes
	// through a pooler that shares sessions per transaction.
	SessionPool *pgxpool.Pool
	// Box opens endpoint signing secrets and custom headers. A process
	// builds it once and gives the same one to the web server and the
	// worker; when nil it is built from SecretKey.
	Box       *secretbox.Box
	SecretKey []byte
	Guard     *ssrf.Guard
	// PartnerGuard dials the endpoints whose URL a partner set in the
	// portal (HOOKLINE_PARTNER_ALLOW_NETWORKS): public addresses only when
	// nil, whatever Guard allows.
	PartnerGuard *ssrf.Guard
	UserAgent    string
	// EgressProxy is the default egress proxy (HOOKLINE_EGRESS_PROXY); nil
	// sends directly. RootCAs replaces the system roots (tests).
	EgressProxy *url.URL
	RootCAs     *x509.CertPool

	// Concurrency bounds the sends in flight in this process (default 256).
	Concurrency int
	// ClaimBatch bounds the rows one claim takes (default 256), and with
	// Concurrency the local queue of claimed deliveries waiting for a
	// sender (min of the two).
	ClaimBatch int
	// PollInterval is the backstop when no notification arrives (default
	// 1 s; DESIGN requires at most 1 s).
	PollInterval time.Duration
	// LeaseMargin is added to an endpoint's timeout to form a breaker
	// probe's lease (default 30 s): past timeout+margin its worker is
	// presumed dead. A claimed delivery waits in the local queue for at
	// most half of it, and a result that cannot be recorded keeps its
	// delivery from being claimed again for that long.
	LeaseMargin time.Duration
	// FlushInterval and FlushSize bound how long and how many results wait
	// before one completion transaction (defaults 5 ms, 512).
	FlushInterval time.Duration
	FlushSize     int
	// Flushers is how many batches may be recorded at once (default 2).
	Flushers int
	// ShutdownGrace is how long in-flight sends may finish after SIGTERM
	// (default 20 s).
	ShutdownGrace time.Duration
	Retention     Retention

	Logger   *slog.Logger
	Now      func() time.Time // injected clock; time.Now when nil
	Rand     backoff.Source   // backoff jitter; a seeded PCG when nil
	WorkerID string           // unique per replica; host-pid-random when empty
	// Sender overrides the HTTP sender (tests); built from Guard when nil.
	Sender *sender.Sender
	// PartnerSender overrides the sender of partner-set URLs (tests);
	// built from PartnerGuard when nil.
	PartnerSender *sender.Sender
	// Metrics receives counters and gauges; nil disables them.
	Metrics *Metrics
	// PublicURL is the dashboard's base URL, linked from operator
	// notifications (none when empty).
	PublicURL string
	// Mail is the SMTP server email channels are sent through
	// (HOOKLINE_SMTP_URL); nil fails their deliveries, retried, with
	// smtp_not_configured.
	Mail *mail.Config
	// HeldOpenAfter is how long a breaker stays open before a
	// breaker.held_open notification (default notify.HeldOpenAfter).
	HeldOpenAfter time.Duration
	// Tracer makes the claim, attempt and completion spans; nil is traces
	// off (worker/deliver_trace.go).
	Tracer *tracing.Tracer
}

// Worker is one replica of the delivery engine.
type Worker struct {
	cfg     Config
	pool    *pgxpool.Pool
	session *pgxpool.Pool // Config.SessionPool
	q       *db.Queries
	send    *sender.Sender
	ownSend bool
	// partnerSend dials endpoints whose URL a partner set, through the
	// partner guard: a name that resolved to a public address when the
	// partner saved it may resolve to a private one now (DNS rebinding).
	// Picking it is a field read per delivery (claimed.PartnerURL).
	partnerSend    *sender.Sender
	ownPartnerSend bool
	box            *secretbox.Box
	backoff        backoff.Policy
	breaker        breaker.Policy
	limits         *ratelimit.Registry
	secrets        secretCache
	tmpls          sync.Map    // template string → *postback.Template
	convLocks      convLocks   // deliveries of one conversion, one at a time (conversion.go)
	headers        sync.Map    // endpoint id → headerEntry
	egress         sync.Map    // endpoint id → egressEntry
	capped         atomic.Bool // the last claim had rate-limited or paused endpoints
	log            *slog.Logger
	now            func() time.Time
	injected       bool // Config.Now was set: SQL uses it too
	id             string
	metrics        *Metrics

	// house keeps retention, partitions, analyses and tallies
	// (housekeeper.go).
	house *housekeeper
	// notifier sends the operator notifications (notifier.go).
	notifier *notifier
	// complete records the senders' results (complete.go).
	complete *completer

	busy atomic.Int64 // claimed deliveries not yet sent: queued or in flight
	// held are the deliveries claimed whose results are not yet recorded,
	// and own the shards this worker owns and the session it claims on
	// (ownership.go).
	held holdings
	own  *ownership // live.own, read by the claims
	// claimPasses counts claim statements that looked at every endpoint
	// and completed, and claimedRows the deliveries every claim and the
	// breaker probes took (always updated first). They make "the worker
	// looked and took nothing" observable: tests wait for passes instead
	// of sleeping.
	claimPasses atomic.Int64
	claimedRows atomic.Int64
	// lookedFor is how many looks everywhere had been asked for
	// (claimHints.askedEverywhere) when the last claim that looked
	// everywhere took its hints: a test waits for it to reach what was
	// asked before it relies on no look everywhere coming.
	lookedFor atomic.Int64
	// queue holds claimed deliveries for the senders, at most
	// min(ClaimBatch, Concurrency) of them.
	queue    chan queued
	freed    chan struct{} // a send finished (claim loop may claim again)
	wake     chan struct{} // a wake-up arrived (NOTIFY or WakeFor)
	hints    claimHints    // where the claim loop looks next
	outbox   chan struct{} // a completion queued operator notifications
	results  chan outcome  // senders → completer
	inflight sync.WaitGroup

	// live holds the liveness session and the shards (liveness.go);
	// alive is live.alive, read by the claim loop (false: claims wait).
	live  *liveness
	alive *atomic.Bool
}

// New validates cfg and builds a Worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Pool == nil {
		return nil, errors.New("worker: Pool is required")
	}
	if cfg.Guard == nil && cfg.Sender == nil {
		return nil, errors.New("worker: Guard is required")
	}
	box := cfg.Box
	if box == nil {
		var err error
		if box, err = secretbox.New(cfg.SecretKey, nil); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	setDefault(&cfg.Concurrency, 256)
	setDefault(&cfg.ClaimBatch, 256)
	setDefault(&cfg.PollInterval, time.Second)
	setDefault(&cfg.LeaseMargin, 30*time.Second)
	setDefault(&cfg.FlushInterval, 5*time.Millisecond)
	setDefault(&cfg.FlushSize, 512)
	setDefault(&cfg.Flushers, 2)
	setDefault(&cfg.ShutdownGrace, 20*time.Second)
	keep := DefaultRetention()
	setDefault(&cfg.Retention.Attempts, keep.Attempts)
	setDefault(&cfg.Retention.MinuteHistograms, keep.MinuteHistograms)
	setDefault(&cfg.Retention.HourlyHistograms, keep.HourlyHistograms)
	setDefault(&cfg.Retention.Delivered, keep.Delivered)
	setDefault(&cfg.Retention.Every, keep.Every)
	setDefault(&cfg.Retention.Budget, keep.Budget)
	setDefault(&cfg.Retention.Batch, keep.Batch)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	injected := cfg.Now != nil
	if !injected {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff)
	}
	w := &Worker{
		cfg:      cfg,
		pool:     cfg.Pool,
		session:  cmp.Or(cfg.SessionPool, cfg.Pool),
		q:        db.New(cfg.Pool),
		send:     cfg.Sender,
		box:      box,
		backoff:  backoff.Default(),
		breaker:  breaker.DefaultPolicy(),
		limits:   ratelimit.NewRegistry(),
		log:      cfg.Logger.With("worker_id", cfg.WorkerID),
		now:      cfg.Now,
		injected: injected,
		id:       cfg.WorkerID,
		metrics:  cfg.Metrics,
		freed:    make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
		outbox:   make(chan struct{}, 1),
		results:  make(chan outcome, cfg.Concurrency+cfg.ClaimBatch),
		queue:    make(chan queued, min(cfg.ClaimBatch, cfg.Concurrency)),
	}
	house, err := newHousekeeper(housekeeperConfig{
		Pool: w.pool, SessionPool: w.session, Retention: cfg.Retention,
		Logger: w.log, Now: cfg.Now, Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}
	w.house = house
	if w.notifier, err = newNotifier(notifierConfig{
		Pool: w.pool, Outbox: w.outbox, WakeClaims: w.wakeEverywhere,
		PublicURL: cfg.PublicURL, HeldOpenAfter: cfg.HeldOpenAfter,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow,
	}); err != nil {
		return nil, err
	}
	if w.live, err = newLiveness(livenessConfig{
		Pool: w.pool, SessionPool: w.session, WorkerID: w.id, Held: &w.held,
		Rescue: w.rescue, WakeClaims: w.wakeEverywhere, Logger: w.log, Metrics: cfg.Metrics,
	}); err != nil {
		return nil, err
	}
	w.own, w.alive = &w.live.own, &w.live.alive
	if w.complete, err = newCompleter(completerConfig{
		Pool: w.pool, WorkerID: w.id, Results: w.results, Recorded: w.recorded, Pause: w.limits.PauseUntil,
		Outbox: w.outbox, FlushInterval: cfg.FlushInterval, FlushSize: cfg.FlushSize, Flushers: cfg.Flushers,
		LeaseMargin: cfg.LeaseMargin, Backoff: w.backoff, Breaker: w.breaker, Rand: cfg.Rand,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow, Metrics: cfg.Metrics, Tracer: cfg.Tracer,
	}); err != nil {
		return nil, err
	}
	if err := w.buildSenders(cfg); err != nil {
		return nil, err
	}
	return w, nil
}

func setDefault[T int | int32 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// ID is this replica's worker id (in its heartbeat, and lease_owner of the
// breaker probes it sends).
func (w *Worker) ID() string { return w.id }

// Run delivers until ctx is cancelled, then shuts down gracefully: it stops
// claiming, lets in-flight sends finish within ShutdownGrace (cancelling the
// rest, which stay due), records every result, gives its shards to the
// other workers as they drain, returns any probe still leased to the queue
// (due now), flushes telemetry, and returns nil.
func (w *Worker) Run(ctx context.Context) error {
	defer w.closeSenders()
	// Sends outlive ctx by the grace period, so a SIGTERM does not cut off
	// requests that are about to be answered.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()

	// The liveness session is held until Run returns, past ctx: while this
	// worker finishes its sends and records them, no replica may take its
	// shards, or it for dead, and send its deliveries again.
	liveCtx, stopLiveness := context.WithCancel(context.WithoutCancel(ctx))
	held := make(chan struct{})
	var live sync.WaitGroup
	live.Go(func() { w.live.Run(liveCtx, held) })
	defer live.Wait()
	defer stopLiveness()
	select {
	case <-held:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		w.log.Warn("liveness lock not held yet; claiming starts once it is")
	}

	w.refreshLimits(ctx)
	w.house.prepare(ctx) // the partitions the first sends write into

	completerDone := make(chan struct{})
	go func() {
		defer close(completerDone)
		w.complete.Run()
	}()

	var bg sync.WaitGroup
	bg.Go(func() { w.listen(ctx) })
	bg.Go(func() { w.maintain(ctx, sendCtx) })
	bg.Go(func() { w.house.Run(ctx) })
	bg.Go(func() { w.notifier.Run(ctx) })

	for range w.cfg.Concurrency {
		w.inflight.Go(func() { w.sendLoop(ctx, sendCtx) })
	}
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency)
	w.claimLoop(ctx)
	close(w.queue) // the senders finish what they hold, release what is queued, and exit

	// Shutdown. Nothing new is claimed from here on; the shards go to the
	// other workers as their deliveries here are recorded.
	w.log.Info("worker stopping: finishing in-flight sends", "in_flight", w.busy.Load(), "grace", w.cfg.ShutdownGrace)
	bg.Wait()
	w.own.drain() // the session loop says so in the heartbeat at once
	sent := make(chan struct{})
	go func() {
		w.inflight.Wait()
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(w.cfg.ShutdownGrace):
		w.log.Warn("shutdown grace expired: cancelling remaining sends", "in_flight", w.busy.Load())
		cancelSends()
		<-sent
	}
	// The database may be gone too: recording the last results gets 30 s,
	// then their leases are left to expire (another replica, or this one
	// after a restart, sends them again).
	w.complete.stopBy(time.Now().Add(30 * time.Second))
	close(w.results)
	<-completerDone
	if n := w.complete.unrecorded.Load(); n > 0 {
		return fmt.Errorf("stopped without recording %d results: the database was unreachable; their deliveries will be sent again", n)
	}

	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if n, err := w.q.DeliveryReleaseOwned(final, db.DeliveryReleaseOwnedParams{Now: w.dbNow(), WorkerID: w.id}); err != nil {
		w.log.Error("release leases at shutdown", "err", err)
	} else if n > 0 {
		w.log.Warn("returned leased deliveries to the queue", "count", n)
	}
	if err := w.flushLatency(final); err != nil {
		w.log.Error("flush latency at shutdown", "err", err)
	}
	// Everything is recorded: the session (with whatever shard locks are
	// left) may end, and then the heartbeat it would otherwise write again.
	stopLiveness()
	live.Wait()
	if err := w.q.WorkerHeartbeatDelete(final, db.WorkerHeartbeatDeleteParams{WorkerID: w.id, Now: w.dbNow()}); err != nil {
		w.log.Warn("remove heartbeat", "err", err)
	}
	w.log.Info("worker stopped")
	return nil
}

// dbNow is the "now" passed to SQL. In production it is nil, and queries
// use the database's now(): ingest stamps next_attempt_at with it, so claims
// must compare against the same clock. Tests inject a clock for both.
func (w *Worker) dbNow() *time.Time {
	if !w.injected {
		return nil
	}
	t := w.now()
	return &t
}

// recorded is told by the completer of each batch recorded: the recorded
// rows no longer count against their endpoints' in-flight caps, so the
// claim loop may find work for those endpoints it could not before.
func (w *Worker) recorded(batch, lost []outcome) {
	w.held.remove(batch, lost)
	if len(lost) > 0 {
		w.held.removeAfter(lost, w.cfg.LeaseMargin)
	}
	ids := make([]int64, len(batch))
	for i := range batch {
		ids[i] = batch[i].d.EndpointID
	}
	w.hints.add(ids...)
	signal(w.freed)
}

// signal sends on a 1-buffered channel without blocking: a pending signal
// already says "look again".
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Wake makes the claim loop look for due work at every endpoint now (used
// by tests and benchmarks that queue deliveries without the ingest; the
// ingest wakes a worker with WakeFor or a NOTIFY).
func (w *Worker) Wake() { w.wakeEverywhere() }
