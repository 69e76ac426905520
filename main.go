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
//	hookline apikey create --name N [--scope S] [--partner ID]  print a new API key (last line)
//	hookline user add --email E --role admin|operator|viewer [--password-stdin]
//	hookline demo [--reset]          embedded database, sample partners, simulated receivers
//	hookline bench                   delivery throughput against the loopback ceiling
//	hookline db url|start|stop       the embedded PostgreSQL alone
//	hookline monitoring prometheus-rules|grafana-dashboard  alert rules, dashboard
//	hookline help [command]          usage, or a command's flags (also: COMMAND --help)
//	hookline version
//
// Help and version never read the configuration; every other command checks
// its flags, then the configuration, before it starts anything.
package main

// Long file: the customer's layout keeps the command line in this one file: commands and their flags, configuration, database, serve, bench, demo.

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
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/demo"
	"github.com/hookline/hookline/web/sso"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/bench"
	"github.com/hookline/hookline/worker/monitoring"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/simulate"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// version is sent as user-agent "hookline/<version>" and shown in the dashboard.
const version = "0.1.0"

func main() {
	if env, ok := withSteadySysmon(os.Args[1:], os.Environ()); ok {
		// Replaces this process with the same binary (the inode it was
		// started from, even if a deploy has since replaced the file), its
		// pid and arguments kept; it returns only on failure.
		err := syscall.Exec("/proc/self/exe", os.Args, env)
		fmt.Fprintf(os.Stderr, "hookline: running with the Go runtime's default monitor period: could not restart with GODEBUG=%s: %v\n", steadySysmon, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go stopOnSignal(sigs, cancel, os.Stderr)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// steadySysmon is the GODEBUG setting hookline's long-running commands run
// with, unless GODEBUG already sets schedtrace (GODEBUG=schedtrace=0 keeps
// the runtime's default).
//
// Go's monitor thread (runtime.sysmon) sleeps 20 µs between its rounds and
// lengthens the sleep only after 50 rounds in which it took no processor
// back. When every processor is idle it sleeps until woken, and when a
// goroutine's system call wakes it from that sleep it starts again at
// 20 µs (runtime/proc.go: "it resets idle and delay as a bet"). A server
// that takes requests in batches goes idle between them many times a
// second: at 3,000 deliveries/s the monitor ran about 3,000 rounds a
// second, each a wake-up of its thread, 2.3 context switches a request and
// a tenth of the process's CPU (worker/bench/performance.md, "Go's monitor
// thread at a steady rate"). With schedtrace set the monitor never sleeps
// until woken, so nothing but a processor taken back shortens its sleep,
// which settles at 10 ms. The setting's own effect is one line of the
// scheduler's state on stderr every 2,147,483,647 ms (24.8 days; also at
// start on a host up longer than that). Nothing else sets the monitor's
// period (golang/go#18236).
const steadySysmon = "schedtrace=2147483647"

// withSteadySysmon returns the environment to restart hookline with, and
// true, when args name a long-running command and env's GODEBUG does not
// set schedtrace.
func withSteadySysmon(args, env []string) ([]string, bool) {
	if len(args) > 0 {
		switch args[0] {
		case "serve", "web", "worker", "demo", "bench":
		default:
			return nil, false
		}
	}
	out := make([]string, 0, len(env)+1)
	godebug, seen := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if !seen { // the runtime reads the first
				godebug, seen = v, true
			}
			continue
		}
		out = append(out, kv)
	}
	for _, setting := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(setting, "="); strings.TrimSpace(k) == "schedtrace" {
			return nil, false
		}
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+steadySysmon), true
}

// stopOnSignal cancels the program's context at the first SIGINT or SIGTERM
// and keeps catching the ones after it until the process exits. A second
// signal is common: make forwards its own SIGTERM to a child that the
// process group's SIGTERM already reached. Dying there would leave the
// embedded PostgreSQL running with nobody to stop it, while the graceful
// stop is bounded anyway (HOOKLINE_SHUTDOWN_GRACE for in-flight sends).
func stopOnSignal(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer) {
	<-sigs
	cancel()
	for sig := range sigs {
		fmt.Fprintf(stderr, "hookline: %s: already stopping (in-flight sends get the shutdown grace period, then the embedded PostgreSQL stops)\n", sig)
	}
}

// exitCode reports err on stderr and turns it into the process's exit
// status: 0 done, 2 a usage error (nothing was started), 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "hookline:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// run is the whole program; main only supplies the process's environment.
// It parses the command line, then validates the configuration, and only
// then runs the command.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	std := stdio{in: stdin, out: stdout}
	act, err := parseCommandLine(args, std)
	if err != nil || act.run == nil { // a usage error, or help was printed
		return err
	}
	if act.noConfig {
		return act.run(ctx, config{}, slog.New(slog.DiscardHandler))
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	err = act.run(ctx, cfg, log)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Stopped by a signal before it was fully started: that is the stop
		// asked for, not a failure.
		log.Info("stopped before start completed", "reason", err)
		return nil
	}
	return err
}

// stdio is what a command reads and prints; logs go to stderr.
type stdio struct {
	in  io.Reader
	out io.Writer
}

// subcommand is one command of hookline.
type subcommand struct {
	name     string // as typed: "serve", "user add"
	synopsis string // its flags, for the usage line
	summary  string
	noConfig bool // runs without reading the configuration (version)
	// flags declares the command's flags on fs and returns the check that
	// runs once they are parsed: it rejects bad values (its error is a usage
	// error) and returns what the command does. It never starts anything.
	flags func(fs *flag.FlagSet, std stdio) func() (runFunc, error)
}

// runFunc runs a command whose flags and configuration are valid.
type runFunc func(ctx context.Context, cfg config, log *slog.Logger) error

// action is a parsed command line: what to run, nil when help was printed.
type action struct {
	run      runFunc
	noConfig bool
}

// usageError is a command line hookline does not accept; the process exits
// with status 2 and starts nothing.
type usageError struct {
	msg   string
	usage string // the usage line of the command concerned
	help  string // how to get more help
}

func (e *usageError) Error() string {
	return e.msg + "\n" + e.usage + "\n" + e.help
}

// commands is every command hookline has, in the order help lists them.
var commands = []subcommand{
	{name: "serve", summary: "run the dashboard, API and delivery worker (default)", flags: noFlags(func(ctx context.Context, cfg config, log *slog.Logger) error {
		return serve(ctx, cfg, log, true, true)
	})},
	{name: "web", summary: "run the dashboard and API only", flags: noFlags(func(ctx context.Context, cfg config, log *slog.Logger) error {
		return serve(ctx, cfg, log, true, false)
	})},
	{name: "worker", summary: "run the delivery worker only", flags: noFlags(func(ctx context.Context, cfg config, log *slog.Logger) error {
		return serve(ctx, cfg, log, false, true)
	})},
	{name: "migrate", summary: "apply database migrations and exit", flags: migrateFlags},
	{name: "apikey create", synopsis: "--name N [--scope ingest|read|admin] [--partner ID]", summary: "create an API key and print it (last line of output)", flags: apikeyCreateFlags},
	{name: "user add", synopsis: "--email E [--role admin|operator|viewer] [--password-stdin]", summary: "add a dashboard user", flags: userAddFlags},
	{name: "demo", synopsis: "[--reset] [--rate N]", summary: "sample partners, simulated receivers, live traffic", flags: demoFlags},
	{name: "bench", synopsis: "[flags]", summary: "measure delivery throughput (see README)", flags: benchFlags},
	{name: "db url", summary: "print the embedded PostgreSQL's connection string", flags: dbURLFlags},
	{name: "db start", synopsis: "[--no-fsync]", summary: "start the embedded PostgreSQL alone", flags: dbStartFlags},
	{name: "db stop", summary: "stop the embedded PostgreSQL, whoever started it", flags: dbStopFlags},
	{name: "monitoring prometheus-rules", summary: "print Prometheus alerting rules for hookline's metrics", noConfig: true, flags: monitoringFlags(monitoring.RulesYAML)},
	{name: "monitoring grafana-dashboard", summary: "print a Grafana dashboard (JSON) over hookline's metrics", noConfig: true, flags: monitoringFlags(monitoring.Dashboard)},
	{name: "version", summary: "print the version", noConfig: true, flags: func(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
		return func() (runFunc, error) {
			return func(context.Context, config, *slog.Logger) error {
				_, err := fmt.Fprintln(std.out, "hookline", version)
				return err
			}, nil
		}
	}},
}

func noFlags(fn runFunc) func(*flag.FlagSet, stdio) func() (runFunc, error) {
	return func(*flag.FlagSet, stdio) func() (runFunc, error) {
		return func() (runFunc, error) { return fn, nil }
	}
}

// monitoringFlags is a monitoring command: it prints what generate makes
// from the metric definitions (worker/monitoring) and reads nothing else,
// so it runs without a configuration or a database, e.g. in the build that
// deploys the rules.
func monitoringFlags(generate func() ([]byte, error)) func(*flag.FlagSet, stdio) func() (runFunc, error) {
	return func(_ *flag.FlagSet, std stdio) func() (runFunc, error) {
		return func() (runFunc, error) {
			return func(context.Context, config, *slog.Logger) error {
				b, err := generate()
				if err != nil {
					return err
				}
				_, err = std.out.Write(b)
				return err
			}, nil
		}
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// parseCommandLine finds the command named by args and parses its flags.
// Help (hookline help [command], -h, --help, COMMAND --help) is printed to
// std.out and yields an empty action.
func parseCommandLine(args []string, std stdio) (action, error) {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch {
	case isHelp(args[0]):
		if len(args) == 1 || isHelp(args[1]) {
			_, err := fmt.Fprint(std.out, usage())
			return action{}, err
		}
		// "hookline help user add" is "hookline user add --help".
		return parseCommandLine(append(append([]string{}, args[1:]...), "--help"), std)
	case args[0] == "-version" || args[0] == "--version":
		args = append([]string{"version"}, args[1:]...)
	case strings.HasPrefix(args[0], "-"):
		return action{}, &usageError{msg: fmt.Sprintf("unknown flag %s", args[0]), usage: "usage: hookline [command] [flags]", help: `run "hookline --help" for the commands`}
	}
	name, rest := args[0], args[1:]
	if subs := subcommands(name); len(subs) > 0 {
		group := &usageError{usage: "usage: hookline " + name + " " + strings.Join(subs, "|") + " [flags]", help: `run "hookline ` + name + ` --help" for details`}
		switch {
		case len(rest) == 0:
			group.msg = name + ": missing command (" + strings.Join(subs, ", ") + ")"
			return action{}, group
		case isHelp(rest[0]):
			_, err := fmt.Fprint(std.out, groupUsage(name))
			return action{}, err
		}
		name, rest = name+" "+rest[0], rest[1:]
		if findCommand(name) == nil {
			group.msg = fmt.Sprintf("unknown command %q", name)
			return action{}, group
		}
	}
	c := findCommand(name)
	if c == nil {
		return action{}, &usageError{msg: fmt.Sprintf("unknown command %q", name), usage: "usage: hookline [command] [flags]", help: `run "hookline --help" for the commands`}
	}
	fs := flag.NewFlagSet("hookline "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed to stdout below
	check := c.flags(fs, std)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(std.out)
			_, err := fmt.Fprint(std.out, c.usage(fs))
			return action{}, err
		}
		return action{}, c.usageError(err.Error())
	}
	if fs.NArg() > 0 {
		return action{}, c.usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	fn, err := check()
	if err != nil {
		return action{}, c.usageError(err.Error())
	}
	return action{run: fn, noConfig: c.noConfig}, nil
}

func findCommand(name string) *subcommand {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// subcommands lists the commands under a group such as "db" (url, start, stop).
func subcommands(group string) []string {
	var subs []string
	for _, c := range commands {
		if g, sub, ok := strings.Cut(c.name, " "); ok && g == group {
			subs = append(subs, sub)
		}
	}
	return subs
}

func (c *subcommand) usageLine() string {
	return strings.TrimSpace("usage: hookline " + c.name + " " + c.synopsis)
}

func (c *subcommand) usageError(msg string) error {
	return &usageError{msg: c.name + ": " + msg, usage: c.usageLine(), help: `run "hookline ` + c.name + ` --help" for details`}
}

// usage is "hookline COMMAND --help": the usage line, the summary and the flags.
func (c *subcommand) usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s.\n", c.usageLine(), upperFirst(c.summary))
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	if !c.noConfig {
		b.WriteString("\nConfiguration comes from environment variables (see README).\n")
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// usage is "hookline --help".
func usage() string {
	var b strings.Builder
	b.WriteString("usage: hookline [command] [flags]\n\ncommands:\n")
	for _, c := range commands {
		writeCommandLine(&b, strings.TrimSpace(c.name+" "+c.synopsis), c.summary)
	}
	writeCommandLine(&b, "help [command]", "print this, or a command's usage and flags")
	b.WriteString("\nWithout a command, hookline serves. \"hookline COMMAND --help\" shows a command's\nflags. Configuration comes from environment variables (see README).\n")
	return b.String()
}

func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: hookline %s %s [flags]\n\ncommands:\n", group, strings.Join(subcommands(group), "|"))
	for _, c := range commands {
		if g, _, _ := strings.Cut(c.name, " "); g == group && strings.Contains(c.name, " ") {
			writeCommandLine(&b, strings.TrimSpace(c.name+" "+c.synopsis), c.summary)
		}
	}
	return b.String()
}

func writeCommandLine(b *strings.Builder, left, summary string) {
	const col = 24
	if len(left) < col-1 {
		fmt.Fprintf(b, "  %-*s%s\n", col, left, summary)
		return
	}
	fmt.Fprintf(b, "  %s\n  %-*s%s\n", left, col, "", summary)
}

// config is everything hookline reads from the environment, validated.
type config struct {
	DatabaseURL   string
	Addr          string
	DataDir       string
	SecretKey     []byte // nil: generated into DataDir (embedded database only)
	SessionKey    []byte // nil: generated into DataDir
	AllowNetworks []netip.Prefix
	// PartnerAllowNetworks opens ranges to URLs partners enter in the
	// portal; empty (the default) means public addresses only, whatever
	// AllowNetworks opens.
	PartnerAllowNetworks []netip.Prefix
	// EgressProxy is the HTTP proxy deliveries leave through
	// (HOOKLINE_EGRESS_PROXY), for fixed source addresses; nil: direct.
	EgressProxy   *url.URL
	MaxBodyBytes  int64
	LogLevel      slog.Level
	LogFormat     string // text | json
	TrustProxy    bool
	ShutdownGrace time.Duration
	Concurrency   int
	Retention     worker.Retention
	SearchKeys    []string // payload fields the event log is searched by
	// Partner portal: how long a sign-in link works and the product name
	// its pages show. PublicURL is the address hookline is reached at, the
	// start of portal links and of the dashboard links in operator
	// notifications ("" = portal links use the address the link API was
	// called at).
	PortalLinkTTL time.Duration
	PortalTitle   string
	PublicURL     string
	// The edge: MetricsAddr serves /metrics on an address of its own
	// ("off": not at all); MetricsToken lets the public listener answer a
	// scrape that carries it; MaxConnections caps open connections.
	MetricsAddr    string
	MetricsToken   string
	MaxConnections int
	// OIDC is single sign-on for the dashboard (nil: off); see
	// config_oidc.go.
	OIDC *sso.Config
	// Require2FA: the roles that must sign in to the dashboard with a
	// second factor: "" none, admin, operator (and admins) or all.
	Require2FA string
	// DirectDatabaseURL is a connection that keeps its session, for
	// LISTEN, advisory locks and migrations when DatabaseURL goes through
	// a transaction pooler (db/direct.go); "" = DatabaseURL serves all.
	DirectDatabaseURL string
	// Tracing is what the OTEL_* variables ask of traces (nil: off).
	Tracing *tracing.Config
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
		SearchKeys:    web.DefaultSearchKeys(),
		PortalLinkTTL: time.Hour,
		PortalTitle:   strings.TrimSpace(getenv("HOOKLINE_PORTAL_TITLE")),
		MetricsAddr:   envOr(getenv, "HOOKLINE_METRICS_ADDR", "127.0.0.1:9464"),
		MetricsToken:  strings.TrimSpace(getenv("HOOKLINE_METRICS_TOKEN")),
		Require2FA:    strings.ToLower(strings.TrimSpace(getenv("HOOKLINE_REQUIRE_2FA"))),
	}
	var errs []error
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_ADDR %q: want host:port such as :8080", c.Addr))
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		errs = append(errs, fmt.Errorf("HOOKLINE_ADDR %q: want a port between 1 and 65535, such as :8080", c.Addr))
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
	if v := getenv(ssrf.PartnerVariable); v != "" {
		if c.PartnerAllowNetworks, err = ssrf.ParseAllowList(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (CIDRs such as 203.0.113.0/24, separated by commas)", ssrf.PartnerVariable, err))
		}
	}
	if v := getenv("HOOKLINE_EGRESS_PROXY"); v != "" {
		if c.EgressProxy, err = sender.ParseProxy(v); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_EGRESS_PROXY: %w (http://host:port)", err))
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
		{"HOOKLINE_PORTAL_LINK_TTL", &c.PortalLinkTTL, time.Minute, 7 * 24 * time.Hour},
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
	if c.MetricsAddr != "off" {
		if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("HOOKLINE_METRICS_ADDR %q: want host:port such as 127.0.0.1:9464, or off", c.MetricsAddr))
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		errs = append(errs, errors.New("HOOKLINE_METRICS_TOKEN: want at least 16 characters (generate one with: openssl rand -hex 16)"))
	}
	if v := getenv("HOOKLINE_MAX_CONNECTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 || n > 1000000 {
			errs = append(errs, fmt.Errorf("HOOKLINE_MAX_CONNECTIONS %q: want a number between 16 and 1000000", v))
		}
		c.MaxConnections = n
	}
	if v := getenv("HOOKLINE_WORKER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			errs = append(errs, fmt.Errorf("HOOKLINE_WORKER_CONCURRENCY %q: want a number between 1 and 10000", v))
		}
		c.Concurrency = n
	}
	if v := strings.TrimRight(strings.TrimSpace(getenv("HOOKLINE_PUBLIC_URL")), "/"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("HOOKLINE_PUBLIC_URL %q: want the address operators and partners reach hookline at, such as https://hooks.example.com", v))
		}
		c.PublicURL = v
	}
	if v := getenv("HOOKLINE_SEARCH_KEYS"); v != "" {
		keys, err := parseSearchKeys(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_SEARCH_KEYS %q: %w", v, err))
		}
		c.SearchKeys = keys
	}
	if !web.ValidRequire2FA(c.Require2FA) {
		errs = append(errs, fmt.Errorf("HOOKLINE_REQUIRE_2FA %q: want admin, operator (operators and admins), all, or empty for none", c.Require2FA))
	}
	if n := utf8.RuneCountInString(c.PortalTitle); n > 100 {
		errs = append(errs, fmt.Errorf("HOOKLINE_PORTAL_TITLE: want at most 100 characters (got %d)", n))
	}
	var directErrs []error
	c.DirectDatabaseURL, directErrs = db.DirectURLFromEnv(getenv, c.DatabaseURL)
	errs = append(errs, directErrs...)
	oidc, oidcErrs := sso.FromEnv(getenv, c.PublicURL)
	c.OIDC = oidc
	errs = append(errs, oidcErrs...)
	var tracingErrs []error
	c.Tracing, tracingErrs = tracing.FromEnv(getenv)
	errs = append(errs, tracingErrs...)
	return c, errors.Join(errs...)
}

// searchKeyName is what HOOKLINE_SEARCH_KEYS accepts as a payload field
// name: the spellings of identifiers in trackers' and shops' payloads.
var searchKeyName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// maxSearchKeys bounds HOOKLINE_SEARCH_KEYS: each key is looked up in every
// payload at ingest.
const maxSearchKeys = 50

// parseSearchKeys reads a comma-separated list of top-level payload field
// names, each once.
func parseSearchKeys(v string) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			return nil, errors.New("want comma-separated field names such as click_id,order_id (an empty name)")
		case !searchKeyName.MatchString(k):
			return nil, fmt.Errorf("field name %q: want 1-100 letters, digits, _ . : -", k)
		case seen[k]:
			return nil, fmt.Errorf("field name %q given twice", k)
		}
		seen[k] = true
		keys = append(keys, k)
	}
	if len(keys) > maxSearchKeys {
		return nil, fmt.Errorf("at most %d field names", maxSearchKeys)
	}
	return keys, nil
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

// databases are the pools a process opens: pool for every statement,
// session for what needs a session of its own (the same pool unless
// DATABASE_URL is pooled per transaction: see database.go).
type databases struct {
	pool, session *pgxpool.Pool
	box           *secretbox.Box
}

// openDatabase connects to DATABASE_URL, or starts (or attaches to) the
// embedded cluster, and applies migrations. The returned close function
// closes the pools and stops a cluster this process started.
func openDatabase(ctx context.Context, cfg config, log *slog.Logger) (*databases, func(), error) {
	if err := resolveKeys(&cfg); err != nil {
		return nil, nil, err
	}
	box, err := secretbox.New(cfg.SecretKey, nil)
	if err != nil {
		return nil, nil, err
	}
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
	poolCfg, err := poolConfig(dsn)
	if err != nil {
		stopCluster()
		return nil, nil, fmt.Errorf("database url: %w", err)
	}
	var directCfg *pgxpool.Config
	if !cfg.embedded() {
		if directCfg, err = db.SeparateSessions(ctx, cfg.DirectDatabaseURL, poolCfg, log, poolConfig); err != nil {
			return nil, nil, err
		}
	}
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
	session := pool
	if directCfg != nil {
		if session, err = pgxpool.NewWithConfig(ctx, directCfg); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("connect to HOOKLINE_DIRECT_DATABASE_URL: %w", err)
		}
	}
	closePools := func() {
		if session != pool {
			session.Close()
		}
		pool.Close()
	}
	// The migrations hold a session lock throughout.
	if err := migrations.Up(ctx, session, migrations.WithSecretBox(box)); err != nil {
		closePools()
		stopCluster()
		return nil, nil, err
	}
	return &databases{pool: pool, session: session, box: box}, func() { closePools(); stopCluster() }, nil
}

// defaultPoolConns is the most connections a process's pool opens when
// DATABASE_URL does not set pool_max_conns. Under serve the web's handlers
// and the worker's batches share it; a worker also opens two connections
// of its own (its ownership session, which runs the claims, and its
// LISTEN).
const defaultPoolConns = 24

// defaultConnectTimeout bounds a connection attempt to one host when
// DATABASE_URL sets no connect_timeout (poolConfig).
const defaultConnectTimeout = 5 * time.Second

// poolConfig is the pool for dsn: at most defaultPoolConns connections
// unless the URL sets pool_max_conns (pgx reads it, and its other pool_
// settings, from the URL), hookline's session settings and its
// application_name.
func poolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// pgxpool takes pool_max_conns out of the parsed settings, so whether
	// the URL set it is read from pgconn's parse of the same string (a
	// password or host that merely contains the name does not count).
	conn, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if _, set := conn.RuntimeParams["pool_max_conns"]; !set {
		cfg.MaxConns = defaultPoolConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "hookline"
	// A server that is gone without a word (a machine powered off, a
	// network partition) drops packets rather than refusing: without a
	// bound each new connection waits out the kernel's SYN retries, about
	// two minutes, before trying the next host of a multi-host URL. pgconn
	// bounds each host's attempt by connect_timeout; 0 (unset) is forever.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	db.ConfigurePool(cfg)
	return cfg, nil
}

func withDatabase(ctx context.Context, cfg config, log *slog.Logger, fn func(context.Context, *pgxpool.Pool) error) error {
	d, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(ctx, d.pool)
}

// listen opens the web server's socket. It comes first in serve and demo:
// a port already in use fails the command before the database, the worker
// or anything else has started.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (HOOKLINE_ADDR): %w", addr, err)
	}
	return ln, nil
}

// serve runs the web server and/or the worker until ctx ends (SIGINT or
// SIGTERM), then shuts both down within the grace period.
func serve(ctx context.Context, cfg config, log *slog.Logger, runWeb, runWorker bool) error {
	var ln, metricsLn net.Listener
	if runWeb {
		var err error
		if ln, err = listen(cfg.Addr); err != nil {
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
	a, closeApp, err := openApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeApp()
	var closeTracer func()
	if a.tracer, closeTracer, err = tracing.Open(ctx, cfg.Tracing, version, log); err != nil {
		return err
	}
	defer closeTracer() // after every span has ended: it exports the last ones
	// Everything that can fail is built before the first goroutine starts,
	// so an early return never leaves one running on the closed pool.
	var w *worker.Worker
	if runWorker {
		if w, err = a.worker(); err != nil {
			return err
		}
	}
	var srv *web.Server
	if runWeb {
		if srv, err = a.webServer(w); err != nil {
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
		a.serveWeb(gctx, g, ln, srv)
		// Pipeline alerts and new dead-letter clusters become operator
		// notifications; returns when gctx ends.
		g.Go(func() error { srv.WatchAlerts(gctx); return nil })
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
	box   *secretbox.Box // the one box: the web server and the worker share it
	guard *ssrf.Guard
	// partnerGuard judges URLs partners set (HOOKLINE_PARTNER_ALLOW_NETWORKS).
	partnerGuard *ssrf.Guard
	reg          *prometheus.Registry
	// session is the pool whose connections keep their session (pool
	// itself unless DATABASE_URL is pooled per transaction).
	session *pgxpool.Pool
	tracer  *tracing.Tracer // nil: traces off
}

// openApp resolves the keys, opens (and migrates) the database, and builds
// the secret box, the guard and the metrics registry; close releases the
// database.
func openApp(ctx context.Context, cfg config, log *slog.Logger) (*app, func(), error) {
	if err := resolveKeys(&cfg); err != nil {
		return nil, nil, err
	}
	d, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &app{cfg: cfg, log: log, pool: d.pool, session: d.session, box: d.box, guard: ssrf.New(cfg.AllowNetworks),
		partnerGuard: ssrf.NewPartner(cfg.PartnerAllowNetworks), reg: reg}, closeDB, nil
}

func (a *app) worker() (*worker.Worker, error) {
	return worker.New(worker.Config{
		Pool:          a.pool,
		SessionPool:   a.session,
		Box:           a.box,
		Guard:         a.guard,
		PartnerGuard:  a.partnerGuard,
		EgressProxy:   a.cfg.EgressProxy,
		UserAgent:     "hookline/" + version,
		Concurrency:   a.cfg.Concurrency,
		ShutdownGrace: a.cfg.ShutdownGrace,
		Retention:     a.cfg.Retention,
		Logger:        a.log,
		Metrics:       worker.NewMetrics(a.reg),
		PublicURL:     a.cfg.PublicURL,
		Tracer:        a.tracer,
	})
}

// webServer builds the dashboard and API; w is the worker of the same
// process, or nil, which the ingest then wakes in process rather than by
// NOTIFY alone.
func (a *app) webServer(w *worker.Worker) (*web.Server, error) {
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
		Version:      version,
		Logger:       a.log,
		Registry:     a.reg,
		SearchKeys:   a.cfg.SearchKeys,
		Portal:       web.PortalConfig{LinkTTL: a.cfg.PortalLinkTTL, Title: a.cfg.PortalTitle, PublicURL: a.cfg.PublicURL},
		Require2FA:   a.cfg.Require2FA,
		Worker:       local,
		OIDC:         a.cfg.OIDC,
		Tracer:       a.tracer,
	})
}

// serveWeb serves the dashboard and API on ln in g until ctx ends.
func (a *app) serveWeb(ctx context.Context, g *errgroup.Group, ln net.Listener, srv *web.Server) {
	a.log.Info("hookline listening", "addr", ln.Addr().String(), "dashboard", dashboardURL(ln.Addr()), "version", version)
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

func dashboardURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

func migrateFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	return func() (runFunc, error) {
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				fmt.Fprintln(std.out, "migrations applied")
				return nil
			})
		}, nil
	}
}

func apikeyCreateFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	name := fs.String("name", "", "a name that says who uses the key (required)")
	scope := fs.String("scope", account.ScopeAdmin, "ingest (post events, read back its own), read (every GET) or admin (everything)")
	partner := fs.Int64("partner", 0, "bind an ingest or read key to the partner with this id")
	return func() (runFunc, error) {
		if strings.TrimSpace(*name) == "" {
			return nil, errors.New("--name is required")
		}
		if !account.ValidScope(*scope) {
			return nil, fmt.Errorf("--scope %q: want ingest, read or admin", *scope)
		}
		spec := account.APIKeySpec{Name: *name, Scope: *scope, CreatedBy: "cli"}
		partnerSet := false
		fs.Visit(func(f *flag.Flag) { partnerSet = partnerSet || f.Name == "partner" })
		if partnerSet {
			switch {
			case *partner <= 0:
				return nil, fmt.Errorf("--partner %d: want a partner id (a positive integer)", *partner)
			case *scope == account.ScopeAdmin:
				return nil, errors.New("--partner goes with --scope ingest or read: an admin key acts on every partner")
			}
			spec.PartnerID = partner
		}
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				key, row, err := account.CreateScopedAPIKey(ctx, pool, spec)
				var fe *account.FieldError
				if errors.As(err, &fe) {
					return fmt.Errorf("--%s: %s", fe.Field, fe.Message)
				}
				if err != nil {
					return err
				}
				bound := ""
				if row.PartnerID != nil {
					bound = fmt.Sprintf(", bound to partner %d", *row.PartnerID)
				}
				fmt.Fprintf(std.out, "created API key %q (prefix %s, scope %s%s); it is shown only once:\n%s\n", row.Name, row.Prefix, row.Scope, bound, key)
				return nil
			})
		}, nil
	}
}

func userAddFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	email := fs.String("email", "", "login email (required)")
	role := fs.String("role", account.RoleOperator, "admin, operator or viewer")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin (otherwise one is generated and printed)")
	return func() (runFunc, error) {
		if strings.TrimSpace(*email) == "" {
			return nil, errors.New("--email is required")
		}
		addr, err := account.NormalizeEmail(*email)
		if err != nil {
			return nil, fmt.Errorf("--email %q is not a valid email address", *email)
		}
		if !account.ValidRole(*role) {
			return nil, fmt.Errorf("--role %q: want admin, operator or viewer", *role)
		}
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			password := ""
			if *fromStdin {
				line, err := bufio.NewReader(std.in).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read password: %w", err)
				}
				password = strings.TrimRight(line, "\r\n")
				if n := len(password); n < account.MinPasswordLen || n > 72 {
					return fmt.Errorf("password from stdin: want %d to 72 bytes, got %d", account.MinPasswordLen, n)
				}
			}
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				u, generated, err := account.AddUser(ctx, pool, addr, *role, password)
				if err != nil {
					return err
				}
				fmt.Fprintf(std.out, "added %s (%s)\n", u.Email, u.Role)
				if generated != "" {
					fmt.Fprintf(std.out, "password (shown only once): %s\n", generated)
				}
				return nil
			})
		}, nil
	}
}

// The db commands manage the embedded cluster alone: "url" prints a
// connection string (psql "$(hookline db url)"), "start" starts it and
// returns, "stop" stops it whoever started it.

func errNotEmbedded(cmd string) error {
	return fmt.Errorf("%s: DATABASE_URL is set; this command manages the embedded database only", cmd)
}

func dbURLFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	return func() (runFunc, error) {
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			if !cfg.embedded() {
				return errNotEmbedded("db url")
			}
			c, err := embedded.Attach(ctx, cfg.DataDir)
			if err != nil {
				return err
			}
			fmt.Fprintln(std.out, c.URL())
			return nil
		}, nil
	}
}

func dbStartFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	noFsync := fs.Bool("no-fsync", false, "start with fsync off (throwaway test clusters only)")
	return func() (runFunc, error) {
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			if !cfg.embedded() {
				return errNotEmbedded("db start")
			}
			c, err := embedded.Start(ctx, embedded.Options{DataDir: cfg.DataDir, NoFsync: *noFsync, Logger: log})
			if err != nil {
				return err
			}
			fmt.Fprintln(std.out, c.URL())
			return nil
		}, nil
	}
}

func dbStopFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	return func() (runFunc, error) {
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			if !cfg.embedded() {
				return errNotEmbedded("db stop")
			}
			c, err := embedded.Attach(ctx, cfg.DataDir)
			if err != nil {
				return err
			}
			return c.ForceStop(ctx)
		}, nil
	}
}

// benchFlags: bench measures throughput on a private cluster (fsync on)
// against a loopback receiver: hookline's worker, the raw HTTP ceiling and
// a naive one-row worker, in one run; -processes adds the deployed
// topology (web, worker and receiver as processes of this executable), and
// -sink is that receiver's process.
func benchFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	var o bench.Options
	fs.IntVar(&o.Deliveries, "deliveries", 20000, "deliveries to drain")
	fs.IntVar(&o.Endpoints, "endpoints", 100, "endpoints they spread over")
	fs.IntVar(&o.Concurrency, "concurrency", 256, "sends in flight")
	fs.IntVar(&o.PayloadBytes, "payload-bytes", 512, "event payload size")
	fs.IntVar(&o.NaiveConcurrency, "naive-concurrency", 64, "connections of the naive one-row worker")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "use this database (its hookline tables are truncated) instead of a private cluster")
	fs.DurationVar(&o.ReceiverDelay, "receiver-delay", 0, "how long the loopback receiver takes to answer (e.g. 20ms, a typical partner)")
	fs.BoolVar(&o.Filter, "filter", false, "put a payload filter (that every event passes) on every endpoint, to measure its ingest cost")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the worker phase to this file")
	fs.BoolVar(&o.Processes, "processes", false, "after the in-process figures, also drain in the deployed topology: hookline web, hookline worker and the receiver each in their own process, the events queued through the API")
	sink := fs.String("sink", "", "instead of the drain: serve the bench's receiver on this loopback address (127.0.0.1:0 picks a port) until stopped, printing its URL and then the requests it received (-processes runs it)")
	var el bench.EventLogOptions
	eventLog := fs.Bool("eventlog", false, "instead of the drain: populate a database with -events events (about 2 deliveries and 3 attempts each) and time the event log's searches, pages and event pages")
	fs.Int64Var(&el.Events, "events", 10_000_000, "with -eventlog: events to populate")
	fs.StringVar(&el.DataDir, "data-dir", "", "with -eventlog: keep the populated PostgreSQL cluster here and reuse it on the next run")
	fs.IntVar(&el.Requests, "requests", 100, "with -eventlog: timed requests per case")
	fs.BoolVar(&el.Retention, "retention", false, "with -eventlog: afterwards run the worker's retention passes (7 days) until nothing is left to delete, and time them")
	rate := fs.Int("rate", 0, "instead of the drain: queue this many events per second for -duration while the worker delivers them, and report their latencies")
	duration := fs.Duration("duration", 20*time.Second, "with -rate: how long to post, after the warm-up")
	warmup := fs.Duration("warmup", 0, "with -rate: post at the rate for this long first, left out of every figure (default a fifth of -duration, at most 2s)")
	batch := fs.Int("batch", 10, "with -rate: events per ingest transaction")
	ingesters := fs.Int("ingesters", 8, "with -rate: ingest transactions in flight at once, as concurrent API requests")
	spread := fs.Bool("spread", false, "with -rate: each event goes to one endpoint, in turn, instead of to every endpoint")
	soak := fs.Duration("soak", 0, "with -rate: a soak; report throughput, latency, table sizes and RSS for every interval this long (e.g. 1m)")
	timelineFile := fs.String("timeline", "", "with -rate: write each second's latency (event created to the receiver, p50, p99, max) to this CSV file")
	retain := fs.Duration("retain-delivered", 0, "with -soak: keep delivered deliveries and their events this long (at least three intervals) instead of 7 days, so retention deletes within the soak")
	liveReads := fs.Bool("live-reads", true, "with -retain-delivered: read each second's enqueue → 1st attempt latencies during the run, before retention takes their rows; false reads them only at the end (the intervals retention took then report none) and spares PostgreSQL that work during the soak")
	return func() (runFunc, error) {
		if *sink != "" {
			if err := bench.LoopbackAddr(*sink); err != nil {
				return nil, fmt.Errorf("--sink %w", err)
			}
			if o.ReceiverDelay < 0 {
				return nil, errors.New("--receiver-delay cannot be negative")
			}
			return func(ctx context.Context, cfg config, log *slog.Logger) error {
				return bench.Sink(ctx, *sink, o.ReceiverDelay, std.out)
			}, nil
		}
		if *timelineFile != "" && *rate == 0 {
			return nil, errors.New("--timeline goes with --rate")
		}
		if *warmup != 0 && *rate == 0 {
			return nil, errors.New("--warmup goes with --rate")
		}
		if o.Processes && (*rate != 0 || *eventLog) {
			return nil, errors.New("--processes adds a row to the drain; it does not go with --rate or --eventlog")
		}
		if *rate != 0 {
			for _, f := range []struct {
				name string
				v    int
			}{{"rate", *rate}, {"batch", *batch}, {"ingesters", *ingesters}, {"endpoints", o.Endpoints}, {"concurrency", o.Concurrency}} {
				if f.v < 1 {
					return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
				}
			}
			if *duration <= 0 {
				return nil, fmt.Errorf("--duration %s: want a positive duration", *duration)
			}
			if *warmup < 0 {
				return nil, fmt.Errorf("--warmup %s: want a positive duration, or 0 for the default", *warmup)
			}
			if *soak < 0 || *soak > *duration {
				return nil, fmt.Errorf("--soak %s: want an interval within --duration", *soak)
			}
			if *retain != 0 && (*soak == 0 || *retain < 3**soak) {
				return nil, fmt.Errorf("--retain-delivered %s: want --soak and at least three of its intervals", *retain)
			}
			if !*liveReads && *retain == 0 {
				return nil, errors.New("--live-reads=false goes with --retain-delivered")
			}
			if o.PayloadBytes < 0 || o.ReceiverDelay < 0 {
				return nil, errors.New("--payload-bytes and --receiver-delay cannot be negative")
			}
			return func(ctx context.Context, cfg config, log *slog.Logger) error {
				so := bench.SteadyOptions{
					Rate: *rate, Duration: *duration, Warmup: *warmup, Batch: *batch, Ingesters: *ingesters, Endpoints: o.Endpoints, Spread: *spread, Soak: *soak, RetainDelivered: *retain, NoLiveReads: !*liveReads, Concurrency: o.Concurrency,
					PayloadBytes: o.PayloadBytes, ReceiverDelay: o.ReceiverDelay, DatabaseURL: o.DatabaseURL, Logger: log,
				}
				if *timelineFile == "" {
					_, err := bench.Steady(ctx, so, std.out)
					return err
				}
				f, err := os.Create(*timelineFile)
				if err != nil {
					return fmt.Errorf("--timeline: %w", err)
				}
				so.Timeline = f
				_, err = bench.Steady(ctx, so, std.out)
				return errors.Join(err, f.Close())
			}, nil
		}
		if *eventLog {
			if el.Events < 1000 {
				return nil, fmt.Errorf("--events %d: want at least 1000", el.Events)
			}
			return func(ctx context.Context, cfg config, log *slog.Logger) error {
				el.Logger, el.DatabaseURL = log, o.DatabaseURL
				el.Handler, el.SignIn = eventLogServer(log), eventLogUsers
				return bench.EventLog(ctx, el, std.out)
			}, nil
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"deliveries", o.Deliveries}, {"endpoints", o.Endpoints}, {"concurrency", o.Concurrency}, {"naive-concurrency", o.NaiveConcurrency}} {
			if f.v < 1 {
				return nil, fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
			}
		}
		if o.PayloadBytes < 0 || o.ReceiverDelay < 0 {
			return nil, errors.New("--payload-bytes and --receiver-delay cannot be negative")
		}
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			o.Logger = log
			if o.Processes {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--processes runs this executable: %w", err)
				}
				o.Executable = exe
			}
			if *profile != "" {
				f, err := os.Create(*profile)
				if err != nil {
					return err
				}
				defer f.Close()
				o.CPUProfile = f
			}
			_, err := bench.Run(ctx, o, std.out)
			return err
		}, nil
	}
}

// eventLogServer builds the web handler the event log bench times: the
// same server serve runs, on the bench's database.
func eventLogServer(log *slog.Logger) func(*pgxpool.Pool) (http.Handler, error) {
	return func(pool *pgxpool.Pool) (http.Handler, error) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		return web.New(web.Config{Pool: pool, SecretKey: key, SessionKey: key, Guard: ssrf.New(nil),
			MaxBodyBytes: 1 << 20, Version: version, Logger: log})
	}
}

// eventLogUsers creates the bench's API key and an operator to sign in as.
func eventLogUsers(ctx context.Context, pool *pgxpool.Pool) (string, string, string, error) {
	key, _, err := account.CreateAPIKey(ctx, pool, "event log bench", "bench")
	if err != nil {
		return "", "", "", err
	}
	email := fmt.Sprintf("bench-%d@hookline.invalid", time.Now().UnixNano())
	_, password, err := account.AddUser(ctx, pool, email, account.RoleOperator, "")
	return key, email, password, err
}

// demoFlags: demo runs hookline on its own embedded database (DATA_DIR/demo)
// with sample partners whose endpoints are simulated receivers on loopback
// (fast, slowing down, failing with 500s, answering 401, rate limiting with
// 429, flaky), 24 h of latency history, and a steady stream of events:
// within seconds the dashboard shows live sparklines, an opening breaker,
// dead-letter clusters and replays that work. --reset deletes DATA_DIR/demo
// first, so the demo starts from nothing again.
func demoFlags(fs *flag.FlagSet, std stdio) func() (runFunc, error) {
	rate := fs.Float64("rate", demo.DefaultRate, "events per second")
	reset := fs.Bool("reset", false, "delete the demo's database and keys (DATA_DIR/demo) and start from nothing")
	return func() (runFunc, error) {
		if !(*rate >= 0.1 && *rate <= 1000) {
			return nil, fmt.Errorf("--rate %v: want events per second between 0.1 and 1000", *rate)
		}
		return func(ctx context.Context, cfg config, log *slog.Logger) error {
			return runDemo(ctx, cfg, log, std, *rate, *reset)
		}, nil
	}
}

func runDemo(ctx context.Context, cfg config, log *slog.Logger, std stdio, rate float64, reset bool) error {
	if !cfg.embedded() {
		return errors.New("demo: runs on its own embedded database; unset DATABASE_URL")
	}
	ln, err := listen(cfg.Addr)
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
		cfg.PublicURL = strings.TrimSuffix(dashboardURL(ln.Addr()), "/")
	}
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
	w, err := a.worker()
	if err != nil {
		return err
	}
	srv, err := a.webServer(w)
	if err != nil {
		return err
	}
	receivers, err := simulate.Start(demo.Receivers(rate), 0)
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
	a.serveWeb(gctx, g, ln, srv)
	stop := func(err error) error {
		cancel()
		return errors.Join(err, g.Wait())
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	o := demo.Options{BaseURL: "http://127.0.0.1:" + port, APIKey: key, Receivers: receivers, Pool: pool, Rate: rate, Logger: log, Now: time.Now}
	endpoints, err := demo.Seed(gctx, o)
	if err != nil {
		return stop(err)
	}
	if err := demo.BackfillLatency(gctx, o, endpoints); err != nil {
		return stop(err)
	}
	if err := w.RefreshNow(gctx); err != nil {
		return stop(err)
	}
	g.Go(func() error { return w.Run(gctx) })
	g.Go(func() error { return demo.Stream(gctx, o) })
	fmt.Fprintf(std.out, "\nhookline demo is running: %s\nsign in as %s with password %s\nAPI key: %s\nCtrl-C stops it.\n\n",
		dashboardURL(ln.Addr()), email, password, key)
	err = g.Wait()
	log.Info("hookline demo stopped")
	return err
}
