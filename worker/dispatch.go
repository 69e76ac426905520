package worker

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// dispatcherConfig configures a dispatcher; Worker.New fills it from
// Config and wires it to the other services; validate says what is
// missing.
type dispatcherConfig struct {
	// Pool reads signing secrets and egress settings and keeps the
	// conversions' state.
	Pool *pgxpool.Pool
	// Box opens signing secrets, custom headers and egress credentials.
	Box *secretbox.Box
	// Queue brings the claimer's deliveries, Probes its breaker probes;
	// the claimer closes both when it stops. Each outcome goes to Results
	// (the completer's), and then Sent is told (the claimer's: its room is
	// free again).
	Queue   <-chan queued
	Probes  <-chan claimed
	Results chan<- outcome
	Sent    func()
	// Concurrency is how many senders take from the queue; LeaseMargin
	// bounds a delivery's wait in it (half of it), and a conversion's
	// reservation past its timeout.
	Concurrency int
	LeaseMargin time.Duration
	// Guard, PartnerGuard, UserAgent, EgressProxy and RootCAs build the
	// two HTTP senders, unless Sender and PartnerSender are given (tests);
	// see buildSenders.
	Guard         *ssrf.Guard
	PartnerGuard  *ssrf.Guard
	UserAgent     string
	EgressProxy   *url.URL
	RootCAs       *x509.CertPool
	Sender        *sender.Sender
	PartnerSender *sender.Sender
	// Mail is the SMTP server of email channels (nil: they fail,
	// retried).
	Mail   *mail.Config
	Logger *slog.Logger
	Now    func() time.Time
	// DBNow is the "now" passed to SQL (nil: the database's clock; see
	// Worker.dbNow).
	DBNow func() *time.Time
	// Tracer may be nil (traces off).
	Tracer *tracing.Tracer
}

func (c dispatcherConfig) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("dispatcher: Pool is required")
	case c.Box == nil:
		return errors.New("dispatcher: Box is required")
	case c.Queue == nil, c.Probes == nil, c.Results == nil:
		return errors.New("dispatcher: Queue, Probes and Results are required")
	case c.Sent == nil:
		return errors.New("dispatcher: Sent is required")
	case c.Concurrency <= 0, c.LeaseMargin <= 0:
		return errors.New("dispatcher: Concurrency and LeaseMargin must be positive")
	case c.Guard == nil && c.Sender == nil:
		return errors.New("dispatcher: Guard is required")
	case c.Logger == nil:
		return errors.New("dispatcher: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("dispatcher: Now and DBNow are required")
	}
	return nil
}

// dispatcher sends what the claimer claimed: Concurrency senders take
// deliveries from the queue (sendLoop), breaker probes are sent at once,
// each on its own (sendProbe), and each attempt (attempt, deliver) builds
// its request from the endpoint's settings, held in caches here (signing
// secrets, custom headers, egress, postback templates), passes a
// conversion's gate when it has one (conversion.go), and goes out through
// one of the two senders (senders.go). Every outcome goes on to the
// completer through Results; nothing here calls back into the claimer
// but Sent.
type dispatcher struct {
	cfg     dispatcherConfig
	pool    *pgxpool.Pool
	q       *db.Queries
	box     *secretbox.Box
	log     *slog.Logger
	now     func() time.Time
	dbNow   func() *time.Time
	send    *sender.Sender
	ownSend bool
	// partnerSend dials endpoints whose URL a partner set, through the
	// partner guard: a name that resolved to a public address when the
	// partner saved it may resolve to a private one now (DNS rebinding).
	// Picking it is a field read per delivery (claimed.PartnerURL).
	partnerSend    *sender.Sender
	ownPartnerSend bool
	secrets        secretCache
	tmpls          sync.Map  // template string → *postback.Template
	convLocks      convLocks // deliveries of one conversion, one at a time (conversion.go)
	headers        sync.Map  // endpoint id → headerEntry
	egress         sync.Map  // endpoint id → egressEntry

	queue   <-chan queued
	probes  <-chan claimed
	results chan<- outcome
}

func newDispatcher(cfg dispatcherConfig) (*dispatcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dp := &dispatcher{cfg: cfg, pool: cfg.Pool, q: db.New(cfg.Pool), box: cfg.Box, log: cfg.Logger, now: cfg.Now,
		dbNow: cfg.DBNow, queue: cfg.Queue, probes: cfg.Probes, results: cfg.Results}
	if err := dp.buildSenders(cfg); err != nil {
		return nil, err
	}
	return dp, nil
}

// Run sends until the claimer has closed the queue and Probes, and
// returns once every send has finished: Concurrency senders take from the
// queue (sendLoop) while each breaker probe is sent on its own
// (sendProbe). Sends run under sendCtx, which outlives claimCtx by the
// shutdown grace; a delivery still queued once claimCtx has ended is
// given back unsent.
func (dp *dispatcher) Run(claimCtx, sendCtx context.Context) {
	var sends sync.WaitGroup
	for range dp.cfg.Concurrency {
		sends.Go(func() { dp.sendLoop(claimCtx, sendCtx) })
	}
	for p := range dp.probes {
		sends.Go(func() { dp.sendProbe(sendCtx, p) })
	}
	sends.Wait()
}

// queued is a claimed delivery waiting for a sender.
type queued struct {
	d  claimed
	at time.Time // when it was claimed (monotonic)
}

// sendLoop is one of Concurrency senders: it sends queued deliveries until
// the queue is closed. A delivery still queued when claiming has stopped
// (shutdown), or queued for half of LeaseMargin (every sender stuck on slow
// partners), is not sent and uses no attempt: it is left due (and no
// longer held), so a send never starts that late. It is also the test
// hook for sending what a queue holds.
func (dp *dispatcher) sendLoop(claimCtx, sendCtx context.Context) {
	for q := range dp.queue {
		var o outcome
		if claimCtx.Err() != nil || time.Since(q.at) > dp.cfg.LeaseMargin/2 {
			now := dp.now()
			o = outcome{d: q.d, res: sender.Result{ErrorClass: sender.ClassCanceled, Started: now}, finished: now}
		} else {
			o = dp.attempt(sendCtx, q.d)
		}
		dp.results <- o
		dp.cfg.Sent()
	}
}

// sendProbe sends one leased delivery (a breaker probe), outside the
// queue; the result goes to the completer, fenced by the lease.
func (dp *dispatcher) sendProbe(ctx context.Context, d claimed) {
	o := dp.attempt(ctx, d)
	o.leased = true
	dp.results <- o
	dp.cfg.Sent()
}
