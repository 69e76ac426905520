package embedded

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStartAttachStop(t *testing.T) {
	if _, err := findBinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Not t.TempDir: its parent is 0700, which the postgres user cannot enter when tests run as root.
	dir, err := os.MkdirTemp("", "hlpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	first, err := Start(ctx, Options{DataDir: dir, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Stop(context.Background()) })
	if !first.Owned() {
		t.Fatal("first Start should own the cluster")
	}
	if pid, err := first.PID(); err != nil || syscall.Kill(pid, 0) != nil {
		t.Fatalf("postmaster pid %d: %v", pid, err)
	}

	second, err := Start(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if second.Owned() {
		t.Fatal("second Start must attach, not own")
	}
	conn, err := pgx.Connect(ctx, second.URL())
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through attached cluster: %v", err)
	}
	conn.Close(ctx)
	if err := second.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if running, _ := first.running(ctx); !running {
		t.Fatal("an attached process stopped a cluster it does not own")
	}

	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if running, _ := first.running(ctx); running {
		t.Fatal("cluster still running after owner's Stop")
	}
	if _, err := Attach(ctx, dir); err == nil {
		t.Fatal("Attach to a stopped cluster should fail")
	}
}

func TestURL(t *testing.T) {
	c := &Cluster{socketDir: "/tmp/x y/run"}
	got := c.URLFor("hookline")
	want := "postgres:///hookline?host=%2Ftmp%2Fx+y%2Frun&sslmode=disable&user=hookline"
	if got != want {
		t.Fatalf("URLFor = %q, want %q", got, want)
	}
	if _, err := pgx.ParseConfig(got); err != nil {
		t.Fatal(err)
	}
}

// TestAttachAndForceStop is "hookline db url" and "hookline db stop" from
// another process: Attach must see the running cluster and ForceStop must
// stop it, also when hookline runs as root and the server as postgres.
func TestAttachAndForceStop(t *testing.T) {
	if _, err := findBinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "hlpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	started, err := Start(ctx, Options{DataDir: dir, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = started.Stop(context.Background()) })

	attached, err := Attach(ctx, dir)
	if err != nil {
		t.Fatalf("Attach to a running cluster: %v", err)
	}
	conn, err := pgx.Connect(ctx, attached.URL())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := attached.ForceStop(ctx); err != nil {
		t.Fatalf("ForceStop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid after ForceStop: %v", err)
	}
}

// TestRemove is "hookline demo --reset": a cluster whose starter still runs
// is refused; one left behind by a dead starter is stopped and deleted with
// its directory.
func TestRemove(t *testing.T) {
	if _, err := findBinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	parent, err := os.MkdirTemp("", "hlpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "demo")
	c, err := Start(ctx, Options{DataDir: dir, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.ForceStop(context.Background()) })
	pid, err := c.PID()
	if err != nil {
		t.Fatal(err)
	}

	if err := Remove(ctx, dir); err == nil || !strings.Contains(err.Error(), "in use by process") {
		t.Fatalf("Remove of a cluster whose starter runs: %v, want an in-use error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "PG_VERSION")); err != nil {
		t.Fatalf("refused Remove deleted files: %v", err)
	}

	// The starter dies (kill -9): its pid is gone.
	if err := os.WriteFile(filepath.Join(dir, "pg.owner"), []byte(strconv.Itoa(deadPID(t))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data directory after Remove: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d still running after Remove", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := Remove(ctx, dir); err != nil {
		t.Fatalf("Remove of a missing directory: %v", err)
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
