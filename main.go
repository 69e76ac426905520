// Command hookline delivers outbound webhooks and affiliate postbacks
// reliably and shows operators whether delivery is slowing down before it
// fails. One binary runs the dashboard, the HTTP API and the delivery worker
// on PostgreSQL.
//
// Usage:
//
//	hookline [serve]                 web + worker (default)
//	hookline web | worker            one half only
//	hookline migrate                 apply migrations and exit
//	hookline apikey create --name N  print a new API key (last line)
//	hookline user add --email E --role admin|operator|viewer [--password-stdin]
//	hookline demo                    embedded database, sample partners, simulated receivers
//	hookline bench                   delivery throughput against the loopback ceiling
//	hookline db url|start|stop       the embedded PostgreSQL alone
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/demo"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/bench"
	"github.com/hookline/hookline/worker/secretbox"
	"github.com/hookline/hookline/worker/simulate"
	"github.com/hookline/hookline/worker/ssrf"
)

// version is sent as user-agent "hookline/<version>" and shown in the dashboard.
const version = "0.1.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal starts a graceful stop, a second one kills at
	// once (default signal handling restored).
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hookline:", err)
		os.Exit(1)
	}
}

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)

	switch cmd {
	case "serve":
		return serve(ctx, cfg, log, true, true)
	case "web":
		return serve(ctx, cfg, log, true, false)
	case "worker":
		return serve(ctx, cfg, log, false, true)
	case "migrate":
		return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
			fmt.Fprintln(stdout, "migrations applied")
			return nil
		})
	case "apikey":
		return apikeyCommand(ctx, cfg, log, args, stdout)
	case "user":
		return userCommand(ctx, cfg, log, args, stdin, stdout)
	case "db":
		return dbCommand(ctx, cfg, log, args, stdout)
	case "demo":
		return demoCommand(ctx, cfg, log, args, stdout)
	case "bench":
		return benchCommand(ctx, cfg, log, args, stdout)
	case "version":
		fmt.Fprintln(stdout, "hookline", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

const usage = `usage: hookline [command]

commands:
  serve                  run the dashboard, API and delivery worker (default)
  web                    run the dashboard and API only
  worker                 run the delivery worker only
  migrate                apply database migrations and exit
  apikey create --name N create an API key and print it (last line of output)
  user add --email E --role admin|operator|viewer [--password-stdin]
  demo                   run with sample partners, simulated receivers and live traffic
  bench                  measure delivery throughput (see README)
  db url|start|stop      manage the embedded PostgreSQL alone
  version                print the version
`

// config is everything hookline reads from the environment, validated.
type config struct {
	DatabaseURL   string
	Addr          string
	DataDir       string
	SecretKey     []byte // nil: generated into DataDir (embedded database only)
	SessionKey    []byte // nil: generated into DataDir
	AllowNetworks []netip.Prefix
	MaxBodyBytes  int64
	LogLevel      slog.Level
	LogFormat     string // text | json
	TrustProxy    bool
	ShutdownGrace time.Duration
	Concurrency   int
	Retention     worker.Retention
}

func (c config) embedded() bool { return c.DatabaseURL == "" }

// loadConfig builds the configuration from environment variables. It is
// pure: files (generated keys) are handled by resolveKeys.
func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		DatabaseURL:   strings.TrimSpace(getenv("DATABASE_URL")),
		Addr:          envOr(getenv, "HOOKLINE_ADDR", ":8080"),
		DataDir:       envOr(getenv, "HOOKLINE_DATA_DIR", "data"),
		MaxBodyBytes:  262144,
		LogFormat:     envOr(getenv, "HOOKLINE_LOG_FORMAT", "text"),
		ShutdownGrace: 20 * time.Second,
		Concurrency:   256,
		Retention:     worker.DefaultRetention(),
	}
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_ADDR %q: want host:port such as :8080", c.Addr))
	}
	var err error
	if c.SecretKey, err = keyFromEnv(getenv, "HOOKLINE_SECRET_KEY"); err != nil {
		errs = append(errs, err)
	}
	if c.SessionKey, err = keyFromEnv(getenv, "HOOKLINE_SESSION_KEY"); err != nil {
		errs = append(errs, err)
	}
	if !c.embedded() {
		if !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") && !strings.Contains(c.DatabaseURL, "=") {
			errs = append(errs, errors.New("DATABASE_URL: want postgres://user:pass@host:5432/db or key=value form"))
		} else if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			errs = append(errs, errors.New("DATABASE_URL: cannot be parsed (check its syntax)"))
		}
		// Replicas must share the keys, so they cannot be generated per host.
		if c.SecretKey == nil && getenv("HOOKLINE_SECRET_KEY") == "" {
			errs = append(errs, errors.New("HOOKLINE_SECRET_KEY is required with DATABASE_URL (generate one with: openssl rand -base64 32)"))
		}
	}
	if v := getenv("HOOKLINE_ALLOW_NETWORKS"); v != "" {
		if c.AllowNetworks, err = ssrf.ParseAllowList(v); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_ALLOW_NETWORKS: %w", err))
		}
	}
	if v := getenv("HOOKLINE_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 || n > 64<<20 {
			errs = append(errs, fmt.Errorf("HOOKLINE_MAX_BODY_BYTES %q: want a number of bytes between 1024 and 67108864", v))
		}
		c.MaxBodyBytes = n
	}
	if v := getenv("HOOKLINE_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_LOG_LEVEL %q: want debug, info, warn or error", v))
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("HOOKLINE_LOG_FORMAT %q: want text or json", c.LogFormat))
	}
	if v := getenv("HOOKLINE_TRUST_PROXY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_TRUST_PROXY %q: want true or false", v))
		}
		c.TrustProxy = b
	}
	durations := []struct {
		name     string
		dst      *time.Duration
		min, max time.Duration
	}{
		{"HOOKLINE_SHUTDOWN_GRACE", &c.ShutdownGrace, 0, 10 * time.Minute},
		{"HOOKLINE_RETAIN_ATTEMPTS", &c.Retention.Attempts, time.Hour, 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_MINUTE_HISTOGRAMS", &c.Retention.MinuteHistograms, 25 * time.Hour, 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_HOURLY_HISTOGRAMS", &c.Retention.HourlyHistograms, 25 * time.Hour, 5 * 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_DELIVERED", &c.Retention.Delivered, time.Hour, 365 * 24 * time.Hour},
	}
	for _, d := range durations {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed < d.min || parsed > d.max {
			errs = append(errs, fmt.Errorf("%s %q: want a duration between %s and %s, such as 168h", d.name, v, d.min, d.max))
			continue
		}
		*d.dst = parsed
	}
	if v := getenv("HOOKLINE_WORKER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			errs = append(errs, fmt.Errorf("HOOKLINE_WORKER_CONCURRENCY %q: want a number between 1 and 10000", v))
		}
		c.Concurrency = n
	}
	return c, errors.Join(errs...)
}

func envOr(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}

func keyFromEnv(getenv func(string) string, name string) ([]byte, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%s: want base64 of exactly 32 bytes (generate one with: openssl rand -base64 32)", name)
	}
	return k, nil
}

// resolveKeys fills keys missing from the environment with ones generated
// once into the data directory (mode 0600), so a restart keeps decrypting
// stored secrets and keeps users logged in.
func resolveKeys(cfg *config) error {
	for _, k := range []struct {
		dst  *[]byte
		file string
	}{{&cfg.SecretKey, "secret.key"}, {&cfg.SessionKey, "session.key"}} {
		if *k.dst != nil {
			continue
		}
		// 0711: the embedded PostgreSQL runs as another user when we are root and
		// must pass through; the key files themselves are 0600.
		if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		key, err := loadOrCreateKey(filepath.Join(cfg.DataDir, k.file))
		if err != nil {
			return err
		}
		*k.dst = key
	}
	return nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("%s is not base64 of 32 bytes: restore it from backup (endpoint secrets cannot be decrypted without it)", path)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	// O_EXCL: two processes starting at once must not each write a key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadOrCreateKey(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openDatabase connects to DATABASE_URL, or starts (or attaches to) the
// embedded cluster, and applies migrations. The returned close function
// closes the pool and stops a cluster this process started.
func openDatabase(ctx context.Context, cfg config, log *slog.Logger) (*pgxpool.Pool, func(), error) {
	dsn := cfg.DatabaseURL
	stopCluster := func() {}
	if cfg.embedded() {
		cluster, err := embedded.Start(ctx, embedded.Options{DataDir: cfg.DataDir, Logger: log})
		if err != nil {
			return nil, nil, err
		}
		dsn = cluster.URL()
		stopCluster = func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.Stop(stopCtx); err != nil {
				log.Error("stop embedded postgres", "err", err)
			} else if cluster.Owned() {
				log.Info("stopped embedded postgres")
			}
		}
	}
	poolCfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		stopCluster()
		return nil, nil, fmt.Errorf("database url: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		poolCfg.MaxConns = 24
	}
	poolCfg.ConnConfig.RuntimeParams["application_name"] = "hookline"
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		stopCluster()
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		stopCluster()
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		pool.Close()
		stopCluster()
		return nil, nil, err
	}
	return pool, func() { pool.Close(); stopCluster() }, nil
}

func withDatabase(ctx context.Context, cfg config, log *slog.Logger, fn func(context.Context, *pgxpool.Pool) error) error {
	pool, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(ctx, pool)
}

// serve runs the web server and/or the worker until ctx ends (SIGINT or
// SIGTERM), then shuts both down within the grace period.
func serve(ctx context.Context, cfg config, log *slog.Logger, runWeb, runWorker bool) error {
	a, closeApp, err := openApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeApp()
	if runWeb {
		hintFirstSteps(ctx, a.pool, log)
	}
	g, gctx := errgroup.WithContext(ctx)
	if runWorker {
		w, err := a.worker()
		if err != nil {
			return err
		}
		g.Go(func() error { return w.Run(gctx) })
	}
	if runWeb {
		if _, err := a.serveWeb(gctx, g); err != nil {
			return err
		}
	}
	err = g.Wait()
	log.Info("hookline stopped")
	return err
}

// app holds what the web server and the worker of one process share: the
// pool, the SSRF guard and the metrics registry.
type app struct {
	cfg   config
	log   *slog.Logger
	pool  *pgxpool.Pool
	guard *ssrf.Guard
	reg   *prometheus.Registry
}

// openApp resolves the keys, opens (and migrates) the database, and builds
// the guard and the metrics registry; close releases the database.
func openApp(ctx context.Context, cfg config, log *slog.Logger) (*app, func(), error) {
	if err := resolveKeys(&cfg); err != nil {
		return nil, nil, err
	}
	pool, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	box, err := secretbox.New(cfg.SecretKey, nil)
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	if n, err := web.SealPlaintextHeaders(ctx, db.New(pool), box); err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("seal stored custom headers: %w", err)
	} else if n > 0 {
		log.Info("sealed custom header values stored in plain text", "endpoints", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &app{cfg: cfg, log: log, pool: pool, guard: ssrf.New(cfg.AllowNetworks), reg: reg}, closeDB, nil
}

func (a *app) worker() (*worker.Worker, error) {
	return worker.New(worker.Config{
		Pool:          a.pool,
		SecretKey:     a.cfg.SecretKey,
		Guard:         a.guard,
		UserAgent:     "hookline/" + version,
		Concurrency:   a.cfg.Concurrency,
		ShutdownGrace: a.cfg.ShutdownGrace,
		Retention:     a.cfg.Retention,
		Logger:        a.log,
		Metrics:       worker.NewMetrics(a.reg),
	})
}

// serveWeb listens on the configured address and serves the dashboard and
// API in g until ctx ends; it returns the address actually listened on.
func (a *app) serveWeb(ctx context.Context, g *errgroup.Group) (net.Addr, error) {
	srv, err := web.New(web.Config{
		Pool:         a.pool,
		SecretKey:    a.cfg.SecretKey,
		SessionKey:   a.cfg.SessionKey,
		Guard:        a.guard,
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		TrustProxy:   a.cfg.TrustProxy,
		Version:      version,
		Logger:       a.log,
		Registry:     a.reg,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	a.log.Info("hookline listening", "addr", ln.Addr().String(), "dashboard", dashboardURL(ln.Addr()), "version", version)
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	g.Go(func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return hs.Shutdown(shutCtx)
	})
	return ln.Addr(), nil
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
		log.Info("no API key yet: create one with: bin/hookline apikey create --name NAME")
	}
}

func dashboardURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

func apikeyCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: hookline apikey create --name NAME")
	}
	fs := flag.NewFlagSet("apikey create", flag.ContinueOnError)
	name := fs.String("name", "", "a name that says who uses the key")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" {
		return errors.New("apikey create: --name is required")
	}
	return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
		key, row, err := account.CreateAPIKey(ctx, pool, *name, "cli")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created API key %q (prefix %s); it is shown only once:\n%s\n", row.Name, row.Prefix, key)
		return nil
	})
}

func userCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return errors.New("usage: hookline user add --email E --role admin|operator|viewer [--password-stdin]")
	}
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	email := fs.String("email", "", "login email")
	role := fs.String("role", "operator", "admin, operator or viewer")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	password := ""
	if *fromStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
		u, generated, err := account.AddUser(ctx, pool, *email, *role, password)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s (%s)\n", u.Email, u.Role)
		if generated != "" {
			fmt.Fprintf(stdout, "password (shown only once): %s\n", generated)
		}
		return nil
	})
}

// dbCommand manages the embedded cluster alone: "url" prints a connection
// string (psql "$(hookline db url)"), "start" starts it and returns, "stop"
// stops it whoever started it.
func dbCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdout io.Writer) error {
	if !cfg.embedded() {
		return errors.New("db: DATABASE_URL is set; these commands manage the embedded database only")
	}
	fs := flag.NewFlagSet("db", flag.ContinueOnError)
	noFsync := fs.Bool("no-fsync", false, "start with fsync off (throwaway test clusters only)")
	if len(args) == 0 {
		return errors.New("usage: hookline db url|start|stop")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "url":
		c, err := embedded.Attach(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, c.URL())
	case "start":
		c, err := embedded.Start(ctx, embedded.Options{DataDir: cfg.DataDir, NoFsync: *noFsync, Logger: log})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, c.URL())
	case "stop":
		c, err := embedded.Attach(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		return c.ForceStop(ctx)
	default:
		return errors.New("usage: hookline db url|start|stop")
	}
	return nil
}

// benchCommand measures throughput on a private cluster (fsync on) against a
// loopback receiver: hookline's worker, the raw HTTP ceiling and a naive
// one-row worker, in one run.
func benchCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o bench.Options
	fs.IntVar(&o.Deliveries, "deliveries", 20000, "deliveries to drain")
	fs.IntVar(&o.Endpoints, "endpoints", 100, "endpoints they spread over")
	fs.IntVar(&o.Concurrency, "concurrency", 256, "sends in flight")
	fs.IntVar(&o.PayloadBytes, "payload-bytes", 512, "event payload size")
	fs.IntVar(&o.NaiveConcurrency, "naive-concurrency", 64, "connections of the naive one-row worker")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "use this database (its hookline tables are truncated) instead of a private cluster")
	fs.DurationVar(&o.ReceiverDelay, "receiver-delay", 0, "how long the loopback receiver takes to answer (e.g. 20ms, a typical partner)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the worker phase to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Logger = log
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		o.CPUProfile = f
	}
	_, err := bench.Run(ctx, o, stdout)
	return err
}

// demoCommand runs hookline on its own embedded database (DATA_DIR/demo) with
// sample partners whose endpoints are simulated receivers on loopback (fast,
// slowing down, failing with 500s, answering 401, rate limiting with 429,
// flaky), 24 h of latency history, and a steady stream of events: within
// seconds the dashboard shows live sparklines, an opening breaker,
// dead-letter clusters and replays that work.
func demoCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	rate := fs.Float64("rate", demo.DefaultRate, "events per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !cfg.embedded() {
		return errors.New("demo: runs on its own embedded database; unset DATABASE_URL")
	}
	cfg.DataDir = filepath.Join(cfg.DataDir, "demo")
	// The simulated partners listen on loopback, which the SSRF guard
	// refuses unless allowed.
	cfg.AllowNetworks = append(cfg.AllowNetworks, netip.MustParsePrefix("127.0.0.0/8"))
	a, closeApp, err := openApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeApp()
	pool := a.pool

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
	receivers, err := simulate.Start(demo.Receivers(*rate), 0)
	if err != nil {
		return err
	}
	defer receivers.Close()

	g, gctx := errgroup.WithContext(ctx)
	addr, err := a.serveWeb(gctx, g)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(addr.String())
	o := demo.Options{BaseURL: "http://127.0.0.1:" + port, APIKey: key, Receivers: receivers, Pool: pool, Rate: *rate, Logger: log, Now: time.Now}
	endpoints, err := demo.Seed(gctx, o)
	if err != nil {
		return err
	}
	if err := demo.BackfillLatency(gctx, o, endpoints); err != nil {
		return err
	}
	w, err := a.worker()
	if err != nil {
		return err
	}
	if err := w.RefreshNow(gctx); err != nil {
		return err
	}
	g.Go(func() error { return w.Run(gctx) })
	g.Go(func() error { return demo.Stream(gctx, o) })
	fmt.Fprintf(stdout, "\nhookline demo is running: %s\nsign in as %s with password %s\nAPI key: %s\nCtrl-C stops it.\n\n",
		dashboardURL(addr), email, password, key)
	err = g.Wait()
	log.Info("hookline demo stopped")
	return err
}
