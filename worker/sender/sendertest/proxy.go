package sendertest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Tinyproxy starts Debian's tinyproxy, a real forward proxy, on a loopback
// port below 32768 (outside the kernel's ephemeral range, so no outgoing
// connection holds it) with a config of its own, and stops it when the
// test ends. extra lines are added to the config (e.g. "ConnectPort 1" for
// a proxy that refuses every CONNECT). It returns host:port.
//
// Without the binary the test is skipped, except in CI (CI=true), where
// that is a failure: .ci/run installs it.
func Tinyproxy(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tinyproxy not installed (apt-get install tinyproxy); CI requires it")
		}
		t.Skip("tinyproxy not installed (apt-get install tinyproxy)")
	}
	dir := t.TempDir()
	for range 20 {
		port := 20000 + rand.IntN(12000)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if l, err := net.Listen("tcp", addr); err != nil {
			continue // taken
		} else {
			l.Close()
		}
		conf := filepath.Join(dir, "tinyproxy.conf")
		text := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 10\nMaxClients 100\nLogLevel Warning\nPidFile %q\n",
			port, filepath.Join(dir, "tinyproxy.pid"))
		for _, l := range extra {
			text += l + "\n"
		}
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-d", "-c", conf)
		// Read only once the process has exited (stop waits for it), so a
		// plain buffer serves: exec writes to it from one goroutine.
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start tinyproxy: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{} // it failed to bind: try another port
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Cleanup(stop)
				return addr
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		t.Logf("tinyproxy did not start on %s: %s", addr, out.String())
	}
	t.Fatal("tinyproxy did not start on any port tried")
	return ""
}
