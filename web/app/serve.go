package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/replica"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// ServeCommand is serve (runWeb and runWorker), web (runWeb alone) or
// worker (runWorker alone): none takes flags.
func ServeCommand(runWeb, runWorker bool) Flags {
	return NoFlags(func(ctx context.Context, cfg Config, log *slog.Logger) error {
		return Serve(ctx, cfg, log, runWeb, runWorker)
	})
}

// Listen opens the web server's socket. It comes first in serve and demo:
// a port already in use fails the command before the database, the worker
// or anything else has started.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (HOOKLINE_ADDR): %w", addr, err)
	}
	return ln, nil
}

// Serve runs the web server and/or the worker until ctx ends (SIGINT or
// SIGTERM), then shuts both down within the grace period.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, runWeb, runWorker bool) error {
	var ln, metricsLn net.Listener
	if runWeb {
		var err error
		if ln, err = Listen(cfg.Addr); err != nil {
			return err
		}
		defer ln.Close()
	}
	if cfg.MetricsAddr != "off" {
		var err error
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return fmt.Errorf("listen on %s (HOOKLINE_METRICS_ADDR; off to serve no metrics listener): %w", cfg.MetricsAddr, err)
		}
		defer metricsLn.Close()
	}
	a, closeApp, err := Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeApp()
	var closeTracer func()
	if a.tracer, closeTracer, err = tracing.Open(ctx, cfg.Tracing, Version, log); err != nil {
		return err
	}
	defer closeTracer() // after every span has ended: it exports the last ones
	// Everything that can fail is built before the first goroutine starts,
	// so an early return never leaves one running on the closed pool.
	var w *worker.Worker
	if runWorker {
		if w, err = a.Worker(); err != nil {
			return err
		}
	}
	var srv *web.Server
	if runWeb {
		if srv, err = a.WebServer(w); err != nil {
			return err
		}
		hintFirstSteps(ctx, a.pool, log)
	}
	g, gctx := errgroup.WithContext(ctx)
	if w != nil {
		g.Go(func() error { return w.Run(gctx) })
	}
	if metricsLn != nil {
		serveMetrics(gctx, g, metricsLn, a.reg, log)
	}
	if srv != nil {
		a.ServeWeb(gctx, g, ln, srv)
		// Pipeline alerts and new dead-letter clusters become operator
		// notifications; returns when gctx ends.
		g.Go(func() error { srv.WatchAlerts(gctx); return nil })
	}
	err = g.Wait()
	log.Info("hookline stopped")
	return err
}

// App holds what the web server and the worker of one process share: the
// pool, the SSRF guard and the metrics registry.
type App struct {
	cfg   Config
	log   *slog.Logger
	pool  *pgxpool.Pool
	box   *secretbox.Box // the one box: the web server and the worker share it
	guard *ssrf.Guard
	// partnerGuard judges URLs partners set (HOOKLINE_PARTNER_ALLOW_NETWORKS).
	partnerGuard *ssrf.Guard
	reg          *prometheus.Registry
	// session is the pool whose connections keep their session (pool
	// itself unless DATABASE_URL is pooled per transaction).
	session *pgxpool.Pool
	reads   *replica.Reads  // the dashboard's read replica, or nil
	tracer  *tracing.Tracer // nil: traces off
}

// Open resolves the keys, opens (and migrates) the database, and builds
// the secret box, the guard and the metrics registry; close releases the
// database.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, func(), error) {
	if err := resolveKeys(&cfg); err != nil {
		return nil, nil, err
	}
	d, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &App{cfg: cfg, log: log, pool: d.pool, session: d.session, box: d.box, guard: ssrf.New(cfg.AllowNetworks),
		partnerGuard: ssrf.NewPartner(cfg.PartnerAllowNetworks), reg: reg, reads: d.reads}, closeDB, nil
}

// Pool is the pool every statement of the process runs on.
func (a *App) Pool() *pgxpool.Pool { return a.pool }

// Worker builds the delivery worker of the process.
func (a *App) Worker() (*worker.Worker, error) {
	return worker.New(worker.Config{
		Pool:          a.pool,
		SessionPool:   a.session,
		Box:           a.box,
		Guard:         a.guard,
		PartnerGuard:  a.partnerGuard,
		EgressProxy:   a.cfg.EgressProxy,
		UserAgent:     "hookline/" + Version,
		Concurrency:   a.cfg.Concurrency,
		ShutdownGrace: a.cfg.ShutdownGrace,
		Retention:     a.cfg.Retention,
		Logger:        a.log,
		Metrics:       worker.NewMetrics(a.reg),
		PublicURL:     a.cfg.PublicURL,
		Mail:          a.cfg.SMTP,
		Tracer:        a.tracer,
	})
}

// WebServer builds the dashboard and API; w is the worker of the same
// process, or nil, which the ingest then wakes in process rather than by
// NOTIFY alone.
func (a *App) WebServer(w *worker.Worker) (*web.Server, error) {
	var local web.LocalWorker
	if w != nil {
		local = w
	}
	return web.New(web.Config{
		Pool:         a.pool,
		Box:          a.box,
		SessionKey:   a.cfg.SessionKey,
		Guard:        a.guard,
		PartnerGuard: a.partnerGuard,
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		Limits:       web.Limits{MaxConnections: a.cfg.MaxConnections},
		MetricsToken: a.cfg.MetricsToken,
		TrustProxy:   a.cfg.TrustProxy,
		Version:      Version,
		Logger:       a.log,
		Registry:     a.reg,
		SearchKeys:   a.cfg.SearchKeys,
		Portal:       web.PortalConfig{LinkTTL: a.cfg.PortalLinkTTL, Title: a.cfg.PortalTitle, PublicURL: a.cfg.PublicURL},
		Require2FA:   a.cfg.Require2FA,
		Worker:       local,
		OIDC:         a.cfg.OIDC,
		Reads:        a.reads,
		Tracer:       a.tracer,
		EgressProxy:  a.cfg.EgressProxy,
	})
}

// ServeWeb serves the dashboard and API on ln in g until ctx ends.
func (a *App) ServeWeb(ctx context.Context, g *errgroup.Group, ln net.Listener, srv *web.Server) {
	a.log.Info("hookline listening", "addr", ln.Addr().String(), "dashboard", DashboardURL(ln.Addr()), "version", Version)
	serveHTTP(ctx, g, srv.HTTPServer(), srv.LimitListener(ln), 10*time.Second)
}

// serveHTTP serves hs on ln in g until ctx ends, then shuts it down
// within grace.
func serveHTTP(ctx context.Context, g *errgroup.Group, hs *http.Server, ln net.Listener, grace time.Duration) {
	g.Go(func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutCtx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		return hs.Shutdown(shutCtx)
	})
}

// serveMetrics serves /metrics (and nothing else) on ln, the metrics
// listener, until ctx ends.
func serveMetrics(ctx context.Context, g *errgroup.Group, ln net.Listener, reg *prometheus.Registry, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: 10 * time.Second}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	log.Info("metrics listening", "addr", ln.Addr().String())
	serveHTTP(ctx, g, hs, ln, 5*time.Second)
}

// hintFirstSteps tells a new installation how to get in: with no user yet,
// how to add the first admin; with no API key, how to create one.
func hintFirstSteps(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	n, err := db.New(pool).SetupCounts(ctx)
	if err != nil {
		return
	}
	if n.Users == 0 {
		log.Info("no dashboard user yet: add the first admin with: bin/hookline user add --email you@example.com --role admin")
	}
	if n.APIKeys == 0 {
		log.Info("no API key yet: create one with: bin/hookline apikey create --name NAME --scope ingest|read|admin")
	}
}

// DashboardURL is the dashboard's address on this machine for a listener
// on addr.
func DashboardURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
