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

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hookline/hookline/web/app"
	"github.com/hookline/hookline/web/demo"
	"github.com/hookline/hookline/worker/bench"
	"github.com/hookline/hookline/worker/monitoring"
)

// version is sent as user-agent "hookline/<version>" and shown in the dashboard.
const version = app.Version

// commands is every command hookline has, in the order help lists them;
// each one's flags and body live in the package it runs.
var commands = app.Table{
	{Name: "serve", Summary: "run the dashboard, API and delivery worker (default)", Flags: app.ServeCommand(true, true)},
	{Name: "web", Summary: "run the dashboard and API only", Flags: app.ServeCommand(true, false)},
	{Name: "worker", Summary: "run the delivery worker only", Flags: app.ServeCommand(false, true)},
	{Name: "migrate", Summary: "apply database migrations and exit", Flags: app.MigrateFlags},
	{Name: "apikey create", Synopsis: "--name N [--scope ingest|read|admin] [--partner ID]", Summary: "create an API key and print it (last line of output)", Flags: app.APIKeyCreateFlags},
	{Name: "user add", Synopsis: "--email E [--role admin|operator|viewer] [--password-stdin]", Summary: "add a dashboard user", Flags: app.UserAddFlags},
	{Name: "demo", Synopsis: "[--reset] [--rate N]", Summary: "sample partners, simulated receivers, live traffic", Flags: demo.Flags},
	{Name: "bench", Synopsis: "[flags]", Summary: "measure delivery throughput (see README)", Flags: bench.Flags},
	{Name: "db url", Summary: "print the embedded PostgreSQL's connection string", Flags: app.DBURLFlags},
	{Name: "db start", Synopsis: "[--no-fsync]", Summary: "start the embedded PostgreSQL alone", Flags: app.DBStartFlags},
	{Name: "db stop", Summary: "stop the embedded PostgreSQL, whoever started it", Flags: app.DBStopFlags},
	{Name: "monitoring prometheus-rules", Summary: "print Prometheus alerting rules for hookline's metrics", NoConfig: true, Flags: app.Print(monitoring.RulesYAML)},
	{Name: "monitoring grafana-dashboard", Summary: "print a Grafana dashboard (JSON) over hookline's metrics", NoConfig: true, Flags: app.Print(monitoring.Dashboard)},
	{Name: "version", Summary: "print the version", NoConfig: true, Flags: app.Print(func() ([]byte, error) {
		return []byte("hookline " + version + "\n"), nil
	})},
}

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
	var ue *app.UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// run is the whole program; main only supplies the process's environment.
// It parses the command line, then validates the configuration, and only
// then runs the command.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	std := app.Stdio{In: stdin, Out: stdout}
	act, err := commands.Parse(args, std)
	if err != nil || act.Run == nil { // a usage error, or help was printed
		return err
	}
	if act.NoConfig {
		return act.Run(ctx, app.Config{}, slog.New(slog.DiscardHandler))
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	err = act.Run(ctx, cfg, log)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Stopped by a signal before it was fully started: that is the stop
		// asked for, not a failure.
		log.Info("stopped before start completed", "reason", err)
		return nil
	}
	return err
}

// newLogger is the process's logger, as HOOKLINE_LOG_LEVEL and
// HOOKLINE_LOG_FORMAT ask.
func newLogger(cfg app.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
