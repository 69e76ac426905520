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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/mail"
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
	// ReachEvery is how often the owner of an endpoint whose breaker
	// opened on connection failures checks whether its partner accepts a
	// TCP connection again, to probe at once when it does (default
	// DefaultReachEvery, ±20 %; negative: never, probes follow the
	// cooldown alone). ReachInFlight bounds the checks in flight in this
	// process (default DefaultReachInFlight). See reachability.go.
	ReachEvery    time.Duration
	ReachInFlight int
	// HeldOpenAfter is how long a breaker stays open before a
	// breaker.held_open notification (default notify.HeldOpenAfter).
	HeldOpenAfter time.Duration
	// Tracer makes the claim, attempt and completion spans; nil is traces
	// off (worker/deliver_trace.go).
	Tracer *tracing.Tracer
}

// Worker is one replica of the delivery engine. It builds its services
// and wires them to each other, and Run starts them and stops them in
// order; what a delivery goes through is theirs: the claimer (claim.go),
// the dispatcher (dispatch.go), the completer (complete.go), and beside
// them the maintainer (maintain.go), the housekeeper (housekeeper.go),
// the notifier (notifier.go) and the liveness service (liveness.go).
type Worker struct {
	cfg      Config
	q        *db.Queries // Run's last statements
	log      *slog.Logger
	injected bool // Config.Now was set: SQL uses it too

	claims   *claimer
	dispatch *dispatcher
	complete *completer
	maint    *maintainer
	house    *housekeeper
	notifier *notifier
	live     *liveness
	reach    *reacher
	// results carries the dispatcher's outcomes to the completer; Run
	// closes it once every send has finished.
	results chan outcome
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
		q:        db.New(cfg.Pool),
		log:      cfg.Logger.With("worker_id", cfg.WorkerID),
		injected: injected,
		results:  make(chan outcome, cfg.Concurrency+cfg.ClaimBatch),
	}
	if err := w.build(box); err != nil {
		return nil, err
	}
	return w, nil
}

// build makes the services and wires them: the claimer's queue and probes
// into the dispatcher, the dispatcher's results into the completer, and
// the funcs each service is given to tell another (the claimer's
// wakeEverywhere, sent, recorded and rate-limit pauses, the liveness
// service's reapDead, the maintainer's rescue). A func is looked up when
// called, so services built later may be named by those built before.
func (w *Worker) build(box *secretbox.Box) error {
	cfg := w.cfg
	session := cmp.Or(cfg.SessionPool, cfg.Pool)
	wakeClaims := func() { w.claims.wakeEverywhere() }
	breakers := breaker.DefaultPolicy()
	outbox := make(chan struct{}, 1) // the completer → the notifier
	queue := make(chan queued, min(cfg.ClaimBatch, cfg.Concurrency))
	probes := make(chan claimed)
	held := &holdings{}
	var err error
	if w.house, err = newHousekeeper(housekeeperConfig{
		Pool: cfg.Pool, SessionPool: session, Retention: cfg.Retention,
		Logger: w.log, Now: cfg.Now, Metrics: cfg.Metrics,
	}); err != nil {
		return err
	}
	if w.notifier, err = newNotifier(notifierConfig{
		Pool: cfg.Pool, Outbox: outbox, WakeClaims: wakeClaims,
		PublicURL: cfg.PublicURL, HeldOpenAfter: cfg.HeldOpenAfter,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow,
	}); err != nil {
		return err
	}
	if w.live, err = newLiveness(livenessConfig{
		Pool: cfg.Pool, SessionPool: session, WorkerID: cfg.WorkerID, Held: held,
		Rescue:     func(ctx context.Context, dead ...string) (int, error) { return w.maint.rescue(ctx, dead...) },
		WakeClaims: wakeClaims, Logger: w.log, Metrics: cfg.Metrics,
	}); err != nil {
		return err
	}
	if w.maint, err = newMaintainer(maintainerConfig{
		Pool: cfg.Pool, Breaker: breakers, ReapDead: w.live.reapDead, WakeClaims: wakeClaims,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow,
	}); err != nil {
		return err
	}
	if w.claims, err = newClaimer(claimerConfig{
		Pool: cfg.Pool, SessionPool: session, WorkerID: cfg.WorkerID,
		Own: &w.live.own, Alive: &w.live.alive, Held: held, Queue: queue, Probes: probes,
		Concurrency: cfg.Concurrency, ClaimBatch: cfg.ClaimBatch, PollInterval: cfg.PollInterval, LeaseMargin: cfg.LeaseMargin,
		Breaker: breakers, Logger: w.log, Now: cfg.Now, DBNow: w.dbNow, Metrics: cfg.Metrics, Tracer: cfg.Tracer,
	}); err != nil {
		return err
	}
	if w.dispatch, err = newDispatcher(dispatcherConfig{
		Pool: cfg.Pool, Box: box, Queue: queue, Probes: probes, Results: w.results, Sent: w.claims.sent,
		Concurrency: cfg.Concurrency, LeaseMargin: cfg.LeaseMargin,
		Guard: cfg.Guard, PartnerGuard: cfg.PartnerGuard, UserAgent: cfg.UserAgent, EgressProxy: cfg.EgressProxy,
		RootCAs: cfg.RootCAs, Sender: cfg.Sender, PartnerSender: cfg.PartnerSender,
		Mail: cfg.Mail, Logger: w.log, Now: cfg.Now, DBNow: w.dbNow, Tracer: cfg.Tracer,
	}); err != nil {
		return err
	}
	if w.reach, err = newReacher(reacherConfig{
		Pool: cfg.Pool, Own: &w.live.own, Breaker: breakers, Every: cfg.ReachEvery, InFlight: cfg.ReachInFlight,
		Egress: w.dispatch.egressFor, SenderFor: w.dispatch.senderFor,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow, Metrics: cfg.Metrics,
	}); err != nil {
		return err
	}
	w.complete, err = newCompleter(completerConfig{
		Pool: cfg.Pool, WorkerID: cfg.WorkerID, Results: w.results, Recorded: w.claims.recorded, Pause: w.claims.limits.PauseUntil,
		Outbox: outbox, FlushInterval: cfg.FlushInterval, FlushSize: cfg.FlushSize, Flushers: cfg.Flushers,
		LeaseMargin: cfg.LeaseMargin, Backoff: backoff.Default(), Breaker: breakers, Rand: cfg.Rand,
		Logger: w.log, Now: cfg.Now, DBNow: w.dbNow, Metrics: cfg.Metrics, Tracer: cfg.Tracer,
	})
	return err
}

func setDefault[T int | int32 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// ID is this replica's worker id (in its heartbeat, and lease_owner of the
// breaker probes it sends).
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Run delivers until ctx is cancelled, then shuts down gracefully: it stops
// claiming, lets in-flight sends finish within ShutdownGrace (cancelling the
// rest, which stay due), records every result, gives its shards to the
// other workers as they drain, returns any probe still leased to the queue
// (due now), flushes telemetry, and returns nil.
func (w *Worker) Run(ctx context.Context) error {
	defer w.dispatch.closeSenders()
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

	w.house.prepare(ctx) // the partitions the first sends write into

	// A delivery's walk, from its end back: the completer records what the
	// dispatcher sent, which the claimer claimed.
	completerDone := make(chan struct{})
	go func() {
		defer close(completerDone)
		w.complete.Run()
	}()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		w.dispatch.Run(ctx, sendCtx)
	}()
	var bg sync.WaitGroup
	bg.Go(func() { w.maint.Run(ctx) })
	bg.Go(func() { w.reach.Run(ctx) })
	bg.Go(func() { w.house.Run(ctx) })
	bg.Go(func() { w.notifier.Run(ctx) })

	w.log.Info("worker started", "concurrency", w.cfg.Concurrency)
	w.claims.Run(ctx) // until ctx ends; then the senders finish what they hold, release what is queued, and exit

	// Shutdown. Nothing new is claimed from here on; the shards go to the
	// other workers as their deliveries here are recorded.
	w.log.Info("worker stopping: finishing in-flight sends", "in_flight", w.claims.busy.Load(), "grace", w.cfg.ShutdownGrace)
	bg.Wait()
	w.live.own.drain() // the session loop says so in the heartbeat at once
	select {
	case <-sent:
	case <-time.After(w.cfg.ShutdownGrace):
		w.log.Warn("shutdown grace expired: cancelling remaining sends", "in_flight", w.claims.busy.Load())
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
	if n, err := w.q.DeliveryReleaseOwned(final, db.DeliveryReleaseOwnedParams{Now: w.dbNow(), WorkerID: w.cfg.WorkerID}); err != nil {
		w.log.Error("release leases at shutdown", "err", err)
	} else if n > 0 {
		w.log.Warn("returned leased deliveries to the queue", "count", n)
	}
	if err := w.maint.flushLatency(final); err != nil {
		w.log.Error("flush latency at shutdown", "err", err)
	}
	// Everything is recorded: the session (with whatever shard locks are
	// left) may end, and then the heartbeat it would otherwise write again.
	stopLiveness()
	live.Wait()
	if err := w.q.WorkerHeartbeatDelete(final, db.WorkerHeartbeatDeleteParams{WorkerID: w.cfg.WorkerID, Now: w.dbNow()}); err != nil {
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
	t := w.cfg.Now()
	return &t
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
func (w *Worker) Wake() { w.claims.wakeEverywhere() }
