package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/app"
	"github.com/hookline/hookline/worker/simulate"
)

// Flags is the demo command: it runs hookline on its own embedded database (DATA_DIR/demo)
// with sample partners whose endpoints are simulated receivers on loopback
// (fast, slowing down, failing with 500s, answering 401, rate limiting with
// 429, flaky), 24 h of latency history, and a steady stream of events:
// within seconds the dashboard shows live sparklines, an opening breaker,
// dead-letter clusters and replays that work. --reset deletes DATA_DIR/demo
// first, so the demo starts from nothing again.
func Flags(fs *flag.FlagSet, std app.Stdio) func() (app.Run, error) {
	rate := fs.Float64("rate", DefaultRate, "events per second")
	reset := fs.Bool("reset", false, "delete the demo's database and keys (DATA_DIR/demo) and start from nothing")
	return func() (app.Run, error) {
		if !(*rate >= 0.1 && *rate <= 1000) {
			return nil, fmt.Errorf("--rate %v: want events per second between 0.1 and 1000", *rate)
		}
		return func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
			return run(ctx, cfg, log, std, *rate, *reset)
		}, nil
	}
}

// run is the demo: its own database, the web server, the simulated
// receivers, the seed through the API, the latency history, the worker and
// the stream of events, until ctx ends.
func run(ctx context.Context, cfg app.Config, log *slog.Logger, std app.Stdio, rate float64, reset bool) error {
	if !cfg.Embedded() {
		return errors.New("demo: runs on its own embedded database; unset DATABASE_URL")
	}
	ln, err := app.Listen(cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	cfg.DataDir = filepath.Join(cfg.DataDir, "demo")
	if reset {
		if err := embedded.Remove(ctx, cfg.DataDir); err != nil {
			return fmt.Errorf("demo --reset: %w", err)
		}
		log.Info("demo data deleted", "dir", cfg.DataDir)
	}
	// The simulated partners listen on loopback, which the SSRF guard
	// refuses unless allowed.
	cfg.AllowNetworks = append(cfg.AllowNetworks, netip.MustParsePrefix("127.0.0.0/8"))
	// The demo is reached on this machine: portal links start with the
	// dashboard's own address unless the operator says otherwise.
	if cfg.PublicURL == "" {
		cfg.PublicURL = strings.TrimSuffix(app.DashboardURL(ln.Addr()), "/")
	}
	a, closeApp, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeApp()
	pool := a.Pool()

	const email = "admin@hookline.example"
	password := account.RandomToken(12)
	if _, _, err := account.AddUser(ctx, pool, email, account.RoleAdmin, password); err != nil {
		var fe *account.FieldError
		if !errors.As(err, &fe) || fe.Field != "email" {
			return err
		}
		// A rerun: the admin exists; give it a fresh password to print.
		hash, err := account.HashPassword(password)
		if err != nil {
			return err
		}
		u, err := db.New(pool).UserGetByEmail(ctx, email)
		if err != nil {
			return err
		}
		if err := db.New(pool).UserSetPassword(ctx, db.UserSetPasswordParams{ID: u.ID, PasswordHash: hash}); err != nil {
			return err
		}
	}
	key, _, err := account.CreateAPIKey(ctx, pool, "demo stream", "demo")
	if err != nil {
		return err
	}
	w, err := a.Worker()
	if err != nil {
		return err
	}
	srv, err := a.WebServer(w)
	if err != nil {
		return err
	}
	receivers, err := simulate.Start(Receivers(rate), 0)
	if err != nil {
		return err
	}
	defer receivers.Close()

	// Seeding goes through the API, so the web server runs before it; a
	// failure from here on stops what runs and waits for it before the
	// deferred closes release the pool.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	a.ServeWeb(gctx, g, ln, srv)
	stop := func(err error) error {
		cancel()
		return errors.Join(err, g.Wait())
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	o := Options{BaseURL: "http://127.0.0.1:" + port, APIKey: key, Receivers: receivers, Pool: pool, Rate: rate, Logger: log, Now: time.Now}
	endpoints, err := Seed(gctx, o)
	if err != nil {
		return stop(err)
	}
	if err := BackfillLatency(gctx, o, endpoints); err != nil {
		return stop(err)
	}
	if err := w.RefreshNow(gctx); err != nil {
		return stop(err)
	}
	g.Go(func() error { return w.Run(gctx) })
	g.Go(func() error { return Stream(gctx, o) })
	fmt.Fprintf(std.Out, "\nhookline demo is running: %s\nsign in as %s with password %s\nAPI key: %s\nCtrl-C stops it.\n\n",
		app.DashboardURL(ln.Addr()), email, password, key)
	err = g.Wait()
	log.Info("hookline demo stopped")
	return err
}
