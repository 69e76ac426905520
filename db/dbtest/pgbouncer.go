package dbtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Bouncer is a PgBouncer of the test's own in front of the test server,
// stopped at the end of the test.
type Bouncer struct {
	Addr string // 127.0.0.1:port it listens on
	Mode string // its pool_mode: session or transaction
}

// URL is dsn (a database of the test server, from URL or EmptyURL) reached
// through the bouncer instead.
func (b *Bouncer) URL(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: b.Addr, Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	}
	return u.String()
}

// PgBouncer starts PgBouncer (Debian's package pgbouncer) in pool mode mode
// in front of the test server, with an ini of its own in a temporary
// directory, listening on a loopback port; it logs in to the server as the
// test server's superuser and knows that user (any database) as a client. In CI
// (CI=true) a missing pgbouncer is a test failure, never a skip.
func PgBouncer(t testing.TB, mode string) *Bouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("pgbouncer required in CI: %v (Debian: apt-get install pgbouncer)", err)
			}
			t.Skipf("no pgbouncer (%v): apt-get install pgbouncer", err)
		}
		bin = "/usr/sbin/pgbouncer"
	}
	admin, err := pgconn.ParseConfig(AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// PgBouncer refuses to run as root: as root it runs as postgres, like
	// the test server, and owns its directory.
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgbouncer runs as the postgres user when the tests run as root: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "hlbouncer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	// Clients log in as the superuser (trust: the user named in
	// auth_file), and PgBouncer logs in to the server under that name,
	// with the password auth_file gives it.
	server := fmt.Sprintf("host=%s port=%d", admin.Host, admin.Port)
	auth := fmt.Sprintf("%q %q\n", admin.User, admin.Password)
	for try := 0; ; try++ {
		port := 20000 + rand.IntN(12000) // loopback, below the ephemeral range
		ini := fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 500
default_pool_size = 40
logfile = %s
pidfile = %s
`, server, port, filepath.Join(dir, "users.txt"), mode, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
		for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": auth} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if cred != nil {
				if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start pgbouncer: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err := waitListening(addr, exited)
		if err == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return &Bouncer{Addr: addr, Mode: mode}
		}
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		if try < 3 && strings.Contains(string(log), "in use") {
			continue // another process had the port
		}
		t.Fatalf("pgbouncer did not start: %v\n%s", err, log)
	}
}

// waitListening waits for addr to accept a connection, or for the process
// to exit.
func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("not listening within 10 s")
}
