// Package embedded runs hookline's private PostgreSQL cluster: when no
// DATABASE_URL is given, hookline initialises a cluster from the local
// PostgreSQL installation inside its data directory, listens only on a unix
// socket there, and stops it on exit. A second hookline process pointed at the
// same data directory attaches to the running cluster instead of starting
// another one.
package embedded

// Long file: the private cluster's whole life (initdb, start, attach, stop) is one state machine over one data directory.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database is the name of the database hookline uses inside the cluster.
const Database = "hookline"

// dbUser is the cluster's superuser. Authentication is "trust" because the
// only way in is the unix socket, whose directory is private to the owner.
const dbUser = "hookline"

// Options configure a cluster.
type Options struct {
	// DataDir is hookline's data directory; the cluster lives in DataDir/pg
	// and its socket in DataDir/run.
	DataDir string
	// NoFsync turns fsync off: for throwaway test clusters only, never for
	// anything that must survive a crash.
	NoFsync bool
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running private cluster.
type Cluster struct {
	dataDir   string
	pgDir     string
	socketDir string
	binDir    string
	cred      *syscall.Credential
	owned     bool
	log       *slog.Logger
}

// ErrNoPostgres says the PostgreSQL server binaries could not be found.
var ErrNoPostgres = errors.New("PostgreSQL server binaries not found: install them (Debian: apt-get install postgresql) or set DATABASE_URL to an existing database")

// Start starts the cluster in o.DataDir, initialising it on first use, or
// attaches to it when another process already runs it. Only a cluster this
// call started (or adopted from a dead owner) is stopped by Stop.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.DataDir == "" {
		return nil, errors.New("embedded postgres: empty data directory")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: data directory: %w", err)
	}
	c := &Cluster{
		dataDir:   dataDir,
		pgDir:     filepath.Join(dataDir, "pg"),
		socketDir: filepath.Join(dataDir, "run"),
		log:       log,
	}
	// The server refuses socket paths longer than the kernel's sun_path.
	if n := len(filepath.Join(c.socketDir, ".s.PGSQL.5432")); n > 107 {
		return nil, fmt.Errorf("embedded postgres: data directory path too long for a unix socket (%d > 107 bytes): set HOOKLINE_DATA_DIR to a shorter path", n)
	}
	if c.binDir, err = findBinDir(); err != nil {
		return nil, err
	}
	if c.cred, err = serverCredential(); err != nil {
		return nil, err
	}

	if err := os.MkdirAll(dataDir, 0o711); err != nil {
		return nil, fmt.Errorf("embedded postgres: create data directory: %w", err)
	}
	// One process at a time decides whether to init, start or attach.
	unlock, err := lockFile(ctx, filepath.Join(dataDir, "pg.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := c.prepareDirs(); err != nil {
		return nil, err
	}
	// initdb and pg_ctl start run to completion even when ctx ends (a
	// SIGTERM during start): killed halfway, they would leave a half-made
	// data directory or a server that nobody stops.
	setup := context.WithoutCancel(ctx)
	if _, err := os.Stat(filepath.Join(c.pgDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := c.initdb(setup); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // stopped before the server was started
	}
	running, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	if running {
		// Adopt a cluster whose starter died (kill -9): somebody must stop it.
		if pid, ok := c.ownerPID(); !ok || !processAlive(pid) {
			c.owned = true
			if err := c.writeOwner(); err != nil {
				return nil, err
			}
			log.Info("adopted embedded postgres", "dir", c.pgDir)
		} else {
			log.Info("attached to running embedded postgres", "dir", c.pgDir)
		}
	} else {
		if err := c.start(setup, o.NoFsync); err != nil {
			return nil, err
		}
		c.owned = true
		log.Info("started embedded postgres", "dir", c.pgDir)
		if err := c.writeOwner(); err != nil {
			return nil, errors.Join(err, c.Stop(setup))
		}
	}
	if err := c.ensureDatabase(ctx); err != nil {
		// Whoever gets no cluster back cannot stop it: stop it here.
		if c.owned {
			if stopErr := c.Stop(setup); stopErr != nil {
				return nil, errors.Join(err, stopErr)
			}
			log.Info("stopped embedded postgres", "dir", c.pgDir)
		}
		return nil, err
	}
	return c, nil
}

// Remove deletes dataDir and everything in it, after stopping its cluster if
// one runs and the process that started it is gone. A cluster whose starter
// still runs is left alone, and Remove fails.
func Remove(ctx context.Context, dataDir string) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockFile(ctx, filepath.Join(abs, "pg.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	c := &Cluster{dataDir: abs, pgDir: filepath.Join(abs, "pg"), socketDir: filepath.Join(abs, "run")}
	if _, err := os.Stat(filepath.Join(c.pgDir, "postmaster.pid")); err == nil {
		if c.binDir, err = findBinDir(); err != nil {
			return err
		}
		if c.cred, err = serverCredential(); err != nil {
			return err
		}
		running, err := c.running(ctx)
		if err != nil {
			return err
		}
		if running {
			if pid, ok := c.ownerPID(); ok && processAlive(pid) {
				return fmt.Errorf("embedded postgres in %s is in use by process %d: stop it first", c.pgDir, pid)
			}
			if err := c.ForceStop(ctx); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("embedded postgres: remove %s: %w", abs, err)
	}
	return nil
}

// Attach connects to a cluster that must already be running; it never starts
// or stops one (used by commands such as "apikey create" next to "serve").
func Attach(ctx context.Context, dataDir string) (*Cluster, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dataDir: abs, pgDir: filepath.Join(abs, "pg"), socketDir: filepath.Join(abs, "run")}
	if c.binDir, err = findBinDir(); err != nil {
		return nil, err
	}
	// pg_ctl refuses to run as root, for status and stop as much as for start.
	if c.cred, err = serverCredential(); err != nil {
		return nil, err
	}
	running, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	if !running {
		return nil, fmt.Errorf("embedded postgres in %s is not running", c.pgDir)
	}
	return c, nil
}

// URL is the connection string for the hookline database.
func (c *Cluster) URL() string { return c.URLFor(Database) }

// URLFor is the connection string for another database in the cluster.
func (c *Cluster) URLFor(database string) string {
	q := url.Values{}
	q.Set("host", c.socketDir)
	q.Set("user", dbUser)
	q.Set("sslmode", "disable")
	return "postgres:///" + url.PathEscape(database) + "?" + q.Encode()
}

// Owned reports whether Stop will shut the cluster down.
func (c *Cluster) Owned() bool { return c.owned }

// PID is the postmaster's process id, read from its postmaster.pid file.
func (c *Cluster) PID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.pgDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// Stop shuts the cluster down if this process owns it ("fast" mode: open
// connections are closed, committed work is safe).
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.owned {
		return nil
	}
	c.owned = false
	_ = os.Remove(filepath.Join(c.dataDir, "pg.owner"))
	return c.pgctl(ctx, "stop", "-D", c.pgDir, "-m", "fast", "-w", "-t", "60")
}

// ForceStop stops the cluster whoever started it (hookline db stop).
func (c *Cluster) ForceStop(ctx context.Context) error {
	c.owned = true
	return c.Stop(ctx)
}

func (c *Cluster) prepareDirs() error {
	// When PostgreSQL runs as another user (we are root), that user must be
	// able to traverse the data directory but not read hookline's keys.
	mode := os.FileMode(0o700)
	if c.cred != nil {
		mode = 0o711
	}
	if err := os.Chmod(c.dataDir, mode); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	for _, d := range []string{c.pgDir, c.socketDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("embedded postgres: %w", err)
		}
		if c.cred != nil {
			if err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return fmt.Errorf("embedded postgres: %w", err)
			}
		}
	}
	if c.cred != nil {
		// Every parent must be searchable by the server's user.
		for dir := filepath.Dir(c.dataDir); ; dir = filepath.Dir(dir) {
			fi, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("embedded postgres: %w", err)
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("embedded postgres: PostgreSQL runs as user %q, which cannot enter %s: choose a HOOKLINE_DATA_DIR outside it, or chmod o+x %s", "postgres", dir, dir)
			}
			if dir == "/" {
				break
			}
		}
	}
	return nil
}

func (c *Cluster) initdb(ctx context.Context) error {
	c.log.Info("initialising embedded postgres", "dir", c.pgDir)
	cmd := c.command(ctx, "initdb", "-D", c.pgDir, "-U", dbUser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("embedded postgres: initdb: %w: %s", err, lastLines(out))
	}
	return nil
}

func (c *Cluster) start(ctx context.Context, noFsync bool) error {
	opts := []string{
		"-c listen_addresses=''",
		"-c unix_socket_directories=" + quoteOpt(c.socketDir),
		"-c unix_socket_permissions=0700",
		"-c max_connections=200",
		"-c shared_buffers=128MB",
		"-c logging_collector=off",
	}
	if noFsync {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	logFile := filepath.Join(c.pgDir, "server.log")
	err := c.pgctl(ctx, "start", "-D", c.pgDir, "-w", "-t", "60", "-l", logFile, "-o", strings.Join(opts, " "))
	if err != nil {
		return fmt.Errorf("%w (server log: %s)", err, logFile)
	}
	return nil
}

func (c *Cluster) running(ctx context.Context) (bool, error) {
	if _, err := os.Stat(filepath.Join(c.pgDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	cmd := c.command(ctx, "pg_ctl", "status", "-D", c.pgDir)
	err := cmd.Run()
	if err == nil {
		return true, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 { // 3: not running
		return false, nil
	}
	if errors.As(err, &exit) && exit.ExitCode() == 4 { // 4: no accessible data directory
		return false, nil
	}
	return false, fmt.Errorf("embedded postgres: pg_ctl status: %w", err)
}

func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := connectRetry(ctx, c.URLFor("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{Database}.Sanitize()); err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) && pgErr.SQLState() == "42P04" { // created meanwhile
			return nil
		}
		return fmt.Errorf("embedded postgres: create database: %w", err)
	}
	return nil
}

func connectRetry(ctx context.Context, dsn string) (*pgx.Conn, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("embedded postgres: connect: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
