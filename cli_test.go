package main

// Tests of the command line: help and version start nothing, bad flags and
// configuration fail before anything starts, and the embedded-database
// commands work for root too.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/sender/sendertest"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/web/app"
	"github.com/hookline/hookline/worker/bench/hooklinebin"
)

// emptyDataDir is a data directory that the postgres user can enter when
// tests run as root (t.TempDir's parent is 0700).
func emptyDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hlcli")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// requireEmpty fails when dir holds anything: a key, a cluster, a lock.
func requireEmpty(t *testing.T, dir, after string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s wrote %v into the data directory: it started something", after, names)
	}
}

// runCLI runs the program in process with env and returns its stdout and
// error. ctx is cancelled already: a command that wrongly starts serving
// stops at once instead of hanging the test, and leaves its traces in the
// data directory.
func runCLI(env map[string]string, args ...string) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok || k != "HOOKLINE_METRICS_ADDR" {
			return v
		}
		return "off" // tests run side by side: no fixed metrics port
	}
	err := run(ctx, args, getenv, strings.NewReader(""), &out, io.Discard)
	return out.String(), err
}

// TestHelpAndVersionStartNothing: every form of help and version prints to
// stdout and succeeds without reading the configuration, touching the data
// directory or starting PostgreSQL, a server or a migration.
func TestHelpAndVersionStartNothing(t *testing.T) {
	dir := emptyDataDir(t)
	// An invalid address: help must not even read the configuration.
	env := map[string]string{"HOOKLINE_DATA_DIR": dir, "HOOKLINE_ADDR": ":99999"}
	cases := map[string]string{ // command line → what stdout must start with
		"--help":    "usage: hookline [command]",
		"-h":        "usage: hookline [command]",
		"-help":     "usage: hookline [command]",
		"help":      "usage: hookline [command]",
		"--version": "hookline " + version,
		"version":   "hookline " + version,
	}
	groups := map[string]bool{}
	for _, c := range commands {
		cases[c.Name+" --help"] = "usage: hookline " + c.Name
		cases[c.Name+" -h"] = "usage: hookline " + c.Name
		cases["help "+c.Name] = "usage: hookline " + c.Name
		if g, _, ok := strings.Cut(c.Name, " "); ok && !groups[g] {
			groups[g] = true
			cases[g+" --help"] = "usage: hookline " + g
			cases[g+" -h"] = "usage: hookline " + g
		}
	}
	for _, must := range []string{"serve", "web", "worker", "migrate", "user add", "apikey create", "demo", "bench", "db url", "db start", "db stop"} {
		if commands.Find(must) == nil {
			t.Errorf("command %q missing from the table", must)
		}
	}
	for line, want := range cases {
		t.Run(line, func(t *testing.T) {
			out, err := runCLI(env, strings.Fields(line)...)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if !strings.HasPrefix(out, want) {
				t.Fatalf("stdout %q, want it to start with %q", out, want)
			}
			requireEmpty(t, dir, "hookline "+line)
		})
	}
}

// TestUsageErrorsStartNothing: unknown commands and flags, missing or bad
// flag values, and bad configuration fail at once with a message naming
// the problem; usage errors exit 2.
func TestUsageErrorsStartNothing(t *testing.T) {
	dir := emptyDataDir(t)
	cases := []struct {
		args  string
		env   map[string]string
		want  string
		usage bool
	}{
		{"bogus", nil, `unknown command "bogus"`, true},
		{"--bogus", nil, "unknown flag --bogus", true},
		{"serve --bogus", nil, "serve: flag provided but not defined: -bogus", true},
		{"serve extra", nil, `serve: unexpected argument "extra"`, true},
		{"migrate now", nil, `migrate: unexpected argument "now"`, true},
		{"user", nil, "user: missing command (add)", true},
		{"user remove", nil, `unknown command "user remove"`, true},
		{"db", nil, "db: missing command (url, start, stop)", true},
		{"db url --no-fsync", nil, "db url: flag provided but not defined: -no-fsync", true},
		{"user add", nil, "user add: --email is required", true},
		{"user add --role admin", nil, "user add: --email is required", true},
		{"user add --email not-an-address", nil, `--email "not-an-address" is not a valid email address`, true},
		{"user add --email ops@hookline.test --role root", nil, `--role "root": want admin, operator or viewer`, true},
		{"apikey create", nil, "apikey create: --name is required", true},
		{"apikey create --name x --scope root", nil, `apikey create: --scope "root": want ingest, read or admin`, true},
		{"apikey create --name x --scope ingest --partner 0", nil, "apikey create: --partner 0: want a partner id (a positive integer)", true},
		{"apikey create --name x --partner 3", nil, "apikey create: --partner goes with --scope ingest or read", true},
		{"apikey create --name x --scope admin --partner 3", nil, "apikey create: --partner goes with --scope ingest or read", true},
		{"demo --rate 0", nil, "demo: --rate 0", true},
		{"bench --deliveries 0", nil, "bench: --deliveries 0", true},
		{"bench --sink 10.1.2.3:0", nil, `bench: --sink "10.1.2.3:0": want a loopback address`, true},
		{"bench --processes --rate 100", nil, "bench: --processes adds a row to the drain", true},
		{"bench --rate 100 --ingesters 0", nil, "bench: --ingesters 0: want at least 1", true},
		{"bench --rate 100 --duration 10m --soak 1m --retain-delivered 2m", nil, "bench: --retain-delivered 2m0s: want --soak and at least three of its intervals", true},
		{"bench --rate 100 --retain-delivered 1h", nil, "bench: --retain-delivered 1h0m0s: want --soak", true},
		{"bench --rate 100 --duration 10m --soak 1m --live-reads=false", nil, "bench: --live-reads=false goes with --retain-delivered", true},
		{"bench --timeline t.csv", nil, "bench: --timeline goes with --rate", true},
		{"bench --warmup 10s", nil, "bench: --warmup goes with --rate", true},
		{"bench --rate 100 --warmup -1s", nil, "bench: --warmup -1s: want a positive duration, or 0 for the default", true},
		{"serve", map[string]string{"HOOKLINE_ADDR": ":99999"}, `HOOKLINE_ADDR ":99999"`, false},
		{"user add --email ops@hookline.test", map[string]string{"HOOKLINE_ADDR": ":99999"}, `HOOKLINE_ADDR ":99999"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			env := map[string]string{"HOOKLINE_DATA_DIR": dir}
			for k, v := range tc.env {
				env[k] = v
			}
			// Not cancelled: a command that wrongly starts the database
			// first would get as far as creating it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run(ctx, strings.Fields(tc.args), func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			var ue *app.UsageError
			if errors.As(err, &ue) != tc.usage {
				t.Fatalf("usage error: %v, want %v (%v)", !tc.usage, tc.usage, err)
			}
			wantCode := 1
			if tc.usage {
				wantCode = 2
			}
			if code := exitCode(err, io.Discard); code != wantCode {
				t.Fatalf("exit status %d, want %d", code, wantCode)
			}
			requireEmpty(t, dir, "hookline "+tc.args)
		})
	}
}

// TestBinaryExitStatus checks the same promises at the process boundary:
// stdout, stderr and exit status of the built binary.
func TestBinaryExitStatus(t *testing.T) {
	bin := hooklinebin.Path(t)
	dir := emptyDataDir(t)
	cases := []struct {
		args   string
		code   int
		stdout string
		stderr string
	}{ // all with HOOKLINE_ADDR=:99999, which only commands that run read
		{"--help", 0, "usage: hookline [command]", ""},
		{"serve --help", 0, "usage: hookline serve", ""},
		{"migrate --help", 0, "usage: hookline migrate", ""},
		{"--version", 0, "hookline " + version, ""},
		{"bogus", 2, "", `unknown command "bogus"`},
		{"user add", 2, "", "--email is required"},
		{"serve", 1, "", `HOOKLINE_ADDR ":99999"`},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, strings.Fields(tc.args)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOOKLINE_DATA_DIR=" + dir, "HOOKLINE_ADDR=:99999"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, &stdout, &stderr)
			}
			if !strings.HasPrefix(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) {
				t.Fatalf("stdout %q, want it to start with %q", &stdout, tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
				t.Fatalf("stderr %q, want it to contain %q", &stderr, tc.stderr)
			}
			requireEmpty(t, dir, "hookline "+tc.args)
		})
	}
}

// TestDBCommands is the README's "psql "$(bin/hookline db url)"" and the
// final "db stop" of make test, also when run as root.
func TestDBCommands(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dir := emptyDataDir(t)
	env := map[string]string{"HOOKLINE_DATA_DIR": dir}
	pidFile := filepath.Join(dir, "pg", "postmaster.pid")
	t.Cleanup(func() { stopPostmaster(t, pidFile) })

	started := strings.TrimSpace(command(t, env, "", "db", "start", "--no-fsync"))
	url := strings.TrimSpace(command(t, env, "", "db", "url"))
	if url != started {
		t.Fatalf("db url printed %q, db start %q", url, started)
	}
	if psql, err := exec.LookPath("psql"); err == nil {
		out, err := exec.Command(psql, url, "-Atc", "SELECT current_database()").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "hookline" {
			t.Fatalf("psql \"$(hookline db url)\": %v: %s", err, out)
		}
	}
	pid := postmasterPID(t, pidFile)
	command(t, env, "", "db", "stop")
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid after db stop: %v", err)
	}
	if !waitExited(pid, 30*time.Second) {
		t.Fatalf("postmaster %d still running 30 s after db stop", pid)
	}
	if _, err := runCLI(env, "db", "url"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("db url of a stopped cluster: %v, want not running", err)
	}
}

// TestServeAndDemoPortTaken: when the address is taken, serve and demo fail
// with a non-zero exit before they start the database or the worker, and
// leave no goroutine behind.
func TestServeAndDemoPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Run("serve", func(t *testing.T) {
		env := map[string]string{
			"DATABASE_URL":         dbtest.URL(t),
			"HOOKLINE_SECRET_KEY":  "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
			"HOOKLINE_SESSION_KEY": "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=",
			"HOOKLINE_ADDR":        ln.Addr().String(),
			"HOOKLINE_DATA_DIR":    emptyDataDir(t),
		}
		err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) || exitCode(err, io.Discard) == 0 {
			t.Fatalf("serve on a taken port: %v", err)
		}
		goleak.VerifyNone(t, sendertest.IgnoreCleaners...)
	})
	t.Run("demo", func(t *testing.T) {
		dir := emptyDataDir(t)
		env := map[string]string{"HOOKLINE_ADDR": ln.Addr().String(), "HOOKLINE_DATA_DIR": dir}
		err := run(context.Background(), []string{"demo"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) || exitCode(err, io.Discard) == 0 {
			t.Fatalf("demo on a taken port: %v", err)
		}
		requireEmpty(t, dir, "demo on a taken port")
		goleak.VerifyNone(t, sendertest.IgnoreCleaners...)
	})
}

func requirePostgres(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("no local PostgreSQL installation")
	}
}

func postmasterPID(t *testing.T, pidFile string) int {
	t.Helper()
	pid, err := readPID(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// readPID reads the postmaster's pid from the first line of its pid file,
// which the server may still be writing.
func readPID(pidFile string) (int, error) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err == nil && pid <= 0 {
		err = fmt.Errorf("pid %d", pid)
	}
	return pid, err
}

// stopPostmaster stops a cluster a failed test left running (SIGINT is
// PostgreSQL's fast shutdown) and waits for it.
func stopPostmaster(t *testing.T, pidFile string) {
	pid, err := readPID(pidFile)
	if err != nil {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGINT)
	waitExited(pid, 30*time.Second)
}

// waitExited waits until process pid has exited (a zombie counts: it is
// gone, only not yet reaped) and reports whether it did within limit.
func waitExited(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if _, after, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(after, "Z") {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
