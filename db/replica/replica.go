// Package replica owns dashboard reads on a read replica
// (HOOKLINE_READ_DATABASE_URL): the replica's pool, how far behind the
// primary its data is, and whether a read goes there or to the primary.
// Which reads may go is the web server's choice (web/reads.go); writes and
// the reads that must see them never come here.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
)

// Config is the read replica's settings.
type Config struct {
	// URL is the replica's connection URL; "" turns replica reads off.
	URL string
	// LagNotice: a page read from the replica says how far behind it is
	// when it is further behind than this.
	LagNotice time.Duration
}

// DefaultLagNotice is LagNotice when HOOKLINE_READ_LAG_NOTICE is unset: a
// dashboard that refreshes every few seconds does not flag a replica that
// is behind by less than one refresh.
const DefaultLagNotice = 5 * time.Second

// FromEnv reads HOOKLINE_READ_DATABASE_URL and HOOKLINE_READ_LAG_NOTICE,
// which only make sense beside a DATABASE_URL.
func FromEnv(getenv func(string) string, databaseURL string) (Config, []error) {
	c := Config{URL: strings.TrimSpace(getenv("HOOKLINE_READ_DATABASE_URL")), LagNotice: DefaultLagNotice}
	var errs []error
	if v := strings.TrimSpace(getenv("HOOKLINE_READ_LAG_NOTICE")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("HOOKLINE_READ_LAG_NOTICE: want a positive duration such as 5s, got %q", v))
		} else {
			c.LagNotice = d
		}
	}
	if c.URL == "" {
		return c, errs
	}
	if databaseURL == "" {
		return c, append(errs, errors.New("HOOKLINE_READ_DATABASE_URL: set only with DATABASE_URL (the embedded database has no replica)"))
	}
	if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		return c, append(errs, errors.New("HOOKLINE_READ_DATABASE_URL: cannot be parsed (check its syntax)"))
	}
	return c, errs
}

// ApplicationName is what the replica's sessions call themselves in
// pg_stat_activity, apart from hookline's sessions on the primary.
const ApplicationName = "hookline reads"

// defaultConns is the most connections the replica's pool opens when its
// URL does not set pool_max_conns: it serves dashboard pages only.
const defaultConns = 8

// interval is how often the replica's lag is measured; a measurement older
// than staleAfter means the replica (or the measuring) hangs, and reads go
// to the primary.
const (
	interval   = time.Second
	staleAfter = 5 * interval
)

// Reads is the read replica beside the primary pool. Its lag is measured
// once a second by a goroutine it starts at the first use (a process that
// serves no dashboard never connects to the replica) and stops in Close.
type Reads struct {
	cfg       Config
	pool      *pgxpool.Pool
	primary   *db.Queries
	replica   *db.Queries
	log       *slog.Logger
	now       func() time.Time
	startOnce sync.Once
	stop      context.CancelFunc
	done      chan struct{}

	mu    sync.Mutex
	lags  lagTracker
	state State
	// notStandby: the replica answered but is not a standby, logged once.
	notStandby bool
}

// State is the replica as last measured.
type State struct {
	// Up: the replica answered the last measurement and is a standby.
	Up bool
	// Lag is how old the replica's data was then (see lagTracker).
	Lag time.Duration
	// ReplayLSN is the WAL position it had replayed.
	ReplayLSN int64
	// MeasuredAt is when; zero before the first answer.
	MeasuredAt time.Time
}

// Open builds the replica's pool from cfg.URL with parse (the way the
// process builds its own pools) beside the primary pool. It does not
// connect: a replica that is down at start only sends the reads to the
// primary.
func Open(cfg Config, primary *pgxpool.Pool, parse func(string) (*pgxpool.Config, error), log *slog.Logger) (*Reads, error) {
	pc, err := parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_READ_DATABASE_URL: %w", err)
	}
	if c, err := pgconn.ParseConfig(cfg.URL); err == nil {
		if _, set := c.RuntimeParams["pool_max_conns"]; !set {
			pc.MaxConns = defaultConns
		}
		if _, set := c.RuntimeParams["application_name"]; !set {
			pc.ConnConfig.RuntimeParams["application_name"] = ApplicationName
		}
	}
	// No named prepared statements: replicas are often reached through a
	// pooler in transaction mode, which hands each transaction any server
	// session. The description of each statement is still cached per
	// connection, and dashboard reads are few.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_READ_DATABASE_URL: %w", err)
	}
	if cfg.LagNotice <= 0 {
		cfg.LagNotice = DefaultLagNotice
	}
	return &Reads{cfg: cfg, pool: pool, primary: db.New(primary), replica: db.New(pool), log: log, now: time.Now}, nil
}

// LagNotice is the lag from which pages read from the replica say so.
func (r *Reads) LagNotice() time.Duration { return r.cfg.LagNotice }

// Pool is the replica's pool.
func (r *Reads) Pool() *pgxpool.Pool { return r.pool }

// Use reports whether a read may go to the replica now, and its lag: it
// answers, its last measurement is recent, and it has replayed the
// reader's own last write (wrote, a primary WAL position; 0 for none).
func (r *Reads) Use(wrote int64) (lag time.Duration, ok bool) {
	r.start()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state
	if !st.Up || r.now().Sub(st.MeasuredAt) > staleAfter || wrote > st.ReplayLSN {
		return 0, false
	}
	return st.Lag, true
}

// State is the replica as last measured, for metrics.
func (r *Reads) State() State {
	r.start()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Failed records that a read on the replica failed as an outage: reads go
// to the primary until the replica answers a measurement again.
func (r *Reads) Failed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Up = false
}

// PrimaryLSN is the primary's WAL position now: a write committed before
// the call is at or below it.
func (r *Reads) PrimaryLSN(ctx context.Context) (int64, error) {
	return r.primary.ReplicaPrimaryLSN(ctx)
}

// start starts the measuring goroutine once; Close stops it.
func (r *Reads) start() {
	r.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		r.stop, r.done = cancel, make(chan struct{})
		go r.watch(ctx)
	})
}

// Close stops the measuring and closes the replica's pool.
func (r *Reads) Close() {
	r.startOnce.Do(func() {}) // never start after Close
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	r.pool.Close()
}

// watch measures the lag every interval until ctx ends.
func (r *Reads) watch(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.measure(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// measure reads the primary's WAL position, then the replica's replayed
// one, in that order: whatever the primary had committed before its
// reading is on the replica when the replica's position passes it.
func (r *Reads) measure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*interval)
	defer cancel()
	lsn, perr := r.primary.ReplicaPrimaryLSN(ctx)
	at := r.now()
	st, rerr := r.replica.ReplicaReplayState(ctx)
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		return // closing
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	// Without the primary's position (it is down, or failing over) the
	// positions already recorded still bound the lag from below.
	if perr == nil {
		r.lags.primaryAt(at, lsn)
	}
	wasUp := r.state.Up
	switch {
	case rerr != nil:
		r.state.Up = false
		if wasUp || r.state.MeasuredAt.IsZero() {
			r.log.Warn("read replica unavailable: dashboard reads go to the primary", "err", rerr)
		}
		// Marked measured once, so a replica down from the start is
		// logged once, not every second.
		if r.state.MeasuredAt.IsZero() {
			r.state.MeasuredAt = now
		}
		return
	case !st.InRecovery:
		// A promoted replica, or a URL pointing at a primary: its data
		// may have parted from DATABASE_URL's, so it serves nothing.
		r.state.Up = false
		if !r.notStandby {
			r.notStandby = true
			r.log.Warn("HOOKLINE_READ_DATABASE_URL is not a standby (not in recovery): dashboard reads go to the primary")
		}
		return
	}
	r.notStandby = false
	r.lags.replayed(st.ReplayLsn)
	r.state = State{Up: true, Lag: r.lags.lag(now), ReplayLSN: st.ReplayLsn, MeasuredAt: now}
	if !wasUp {
		r.log.Info("read replica answering: dashboard reads go to it", "lag", r.state.Lag.Round(time.Millisecond))
	}
}
