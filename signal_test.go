package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/bench/hooklinebin"
)

// TestRepeatedSigtermStopsEmbeddedPostgres is "make run" stopped by a
// SIGTERM to its process group: hookline gets the group's SIGTERM and then
// the one make forwards to its child. Whenever they arrive (back to back,
// the second while the shutdown is under way, or both while the embedded
// PostgreSQL is still starting), hookline must exit 0 having stopped its
// cluster, never leave it running with nobody to stop it.
func TestRepeatedSigtermStopsEmbeddedPostgres(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	bin := hooklinebin.Path(t)
	for _, phase := range []string{"back to back", "during shutdown", "while starting"} {
		t.Run(phase, func(t *testing.T) {
			dir := emptyDataDir(t)
			addr := crashLoopbackAddr(t)
			pidFile := filepath.Join(dir, "pg", "postmaster.pid")
			t.Cleanup(func() { stopPostmaster(t, pidFile) })

			out := &lockedBuffer{}
			cmd := exec.Command(bin, "serve")
			cmd.Env = []string{
				"PATH=" + os.Getenv("PATH"),
				"HOME=" + os.Getenv("HOME"),
				"TMPDIR=" + os.TempDir(),
				"HOOKLINE_DATA_DIR=" + dir,
				"HOOKLINE_ADDR=" + addr,
				"HOOKLINE_METRICS_ADDR=off",
			}
			cmd.Stdout, cmd.Stderr = out, out
			// Its own process group, as make's child is in make's.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				_ = cmd.Wait() // the exit status is read from ProcessState
				close(done)
			}()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					_ = cmd.Process.Kill()
					<-done
				}
				if t.Failed() {
					t.Logf("hookline output:\n%s", out.tail(16<<10))
				}
			})
			// waitFor polls cond until it holds; false when hookline exited first.
			waitFor := func(what string, cond func() bool) bool {
				t.Helper()
				deadline := time.Now().Add(60 * time.Second)
				for !cond() {
					select {
					case <-done:
						return false
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %s within 60 s", what)
					}
					time.Sleep(5 * time.Millisecond)
				}
				return true
			}
			logged := func(s string) func() bool {
				return func() bool { return strings.Contains(out.tail(64<<10), s) }
			}

			started := waitFor("postmaster.pid", func() bool {
				_, err := readPID(pidFile)
				return err == nil
			})
			if phase != "while starting" {
				started = waitFor("readiness", func() bool {
					resp, err := http.Get("http://" + addr + "/readyz")
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				})
			}
			if !started {
				t.Fatalf("hookline exited before the signals: %s", cmd.ProcessState)
			}
			pid := postmasterPID(t, pidFile)

			// During shutdown: a client in the middle of sending its request
			// keeps the HTTP server's shutdown waiting (up to 5 s for a
			// connection that has not finished its first request), so the
			// second SIGTERM surely lands while hookline is stopping.
			var slow net.Conn
			if phase == "during shutdown" {
				var err error
				if slow, err = net.Dial("tcp", addr); err != nil {
					t.Fatal(err)
				}
				defer slow.Close()
				if _, err := slow.Write([]byte("GET /readyz HTTP/1.1\r\n")); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil { // the group's
				t.Fatal(err)
			}
			if phase == "during shutdown" {
				if !waitFor("shutdown", logged("worker stopped")) {
					t.Fatal("hookline exited while a request was still being read")
				}
			}
			if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil { // make's
				t.Fatal(err)
			}
			if phase == "during shutdown" && waitFor("notice of the second signal", logged("already stopping")) {
				slow.Close()
			}
			select {
			case <-done:
			case <-time.After(90 * time.Second):
				t.Fatal("hookline still running 90 s after two SIGTERMs")
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("hookline ended with %s after two SIGTERMs, want exit status 0", cmd.ProcessState)
			}
			if !waitExited(pid, 30*time.Second) {
				t.Fatalf("postmaster %d still running 30 s after hookline exited", pid)
			}
			if _, err := os.Stat(pidFile); err == nil {
				t.Fatal("postmaster.pid left behind: the cluster was not shut down cleanly")
			}
		})
	}
}
