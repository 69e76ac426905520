package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/worker/bench/hooklinebin"
)

// startBinary runs the hookline binary's serve with env, as a process of
// its own (built without the race detector, whatever the tests run with:
// the load is the point), until the end of the test, and waits until it is
// ready; its output is shown when the test fails.
func startBinary(t *testing.T, env map[string]string) *process {
	t.Helper()
	cmd := exec.Command(hooklinebin.Path(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("hookline output:\n%s", out.tail(32<<10))
		}
	})
	p := &process{t: t, env: env, addr: env["HOOKLINE_ADDR"]}
	waitUntil(t, 60*time.Second, "hookline ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("hookline exited during start: %s\n%s", cmd.ProcessState, out.tail(8<<10))
		default:
		}
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// pgNode is a PostgreSQL server of the failover test's own, on a loopback
// port.
type pgNode struct {
	t    *testing.T
	name string
	dir  string // data directory
	port int
	bin  string
	cred *syscall.Credential // the postgres user when the tests run as root
}

// pgBinDir is the newest local PostgreSQL installation's bin directory.
func pgBinDir(t *testing.T) string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(dirs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL server binaries required in CI: apt-get install postgresql")
		}
		t.Skip("no local PostgreSQL installation")
	}
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))))
		return vi < vj
	})
	return filepath.Dir(dirs[len(dirs)-1])
}

// loopbackPort is a free loopback port below the ephemeral range.
func loopbackPort(t *testing.T) int {
	for range 50 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

func (n *pgNode) run(args ...string) string {
	n.t.Helper()
	cmd := exec.Command(filepath.Join(n.bin, args[0]), args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: n.cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(n.dir + ".log")
		n.t.Fatalf("%s %v: %v\n%s\n%s", n.name, args, err, out, log)
	}
	return string(out)
}

// start starts the server.
func (n *pgNode) start() {
	n.t.Helper()
	opts := []string{
		"-c port=" + strconv.Itoa(n.port),
		"-c listen_addresses=127.0.0.1",
		"-c unix_socket_directories=''",
		"-c max_connections=100",
		"-c shared_buffers=64MB",
		// A process kill keeps what the kernel was given: fsync only
		// matters for a machine that loses power.
		"-c fsync=off",
		"-c wal_level=replica",
		"-c max_wal_senders=4",
		"-c wal_receiver_status_interval=1s",
	}
	n.run("pg_ctl", "start", "-D", n.dir, "-w", "-t", "60", "-l", n.dir+".log", "-o", strings.Join(opts, " "))
	n.t.Cleanup(func() { n.stop() })
}

// stop stops the server if it runs (immediate: the test is over).
func (n *pgNode) stop() {
	if _, err := os.Stat(filepath.Join(n.dir, "postmaster.pid")); err != nil {
		return
	}
	cmd := exec.Command(filepath.Join(n.bin, "pg_ctl"), "stop", "-D", n.dir, "-m", "immediate", "-w")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	_ = cmd.Run()
}

// kill9 kills the postmaster and every process of the server with SIGKILL,
// the way a machine that dies takes them all at once.
func (n *pgNode) kill9() {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "postmaster.pid"))
	if err != nil {
		n.t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		n.t.Fatal(err)
	}
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ")".
		i := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	// Gone, or a zombie nobody reaps (its parent, pg_ctl, has exited).
	waitUntil(n.t, 10*time.Second, n.name+" killed", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		i := bytes.LastIndexByte(stat, ')')
		return strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
	})
}

func (n *pgNode) url(db string) string {
	return fmt.Sprintf("postgres://hookline@127.0.0.1:%d/%s?sslmode=disable", n.port, db)
}

// replicatedPair starts a primary and a streaming standby made from it with
// pg_basebackup -R, synchronous (every commit waits for the standby's
// flush), with the database hookline on both.
func replicatedPair(t *testing.T) (primary, standby *pgNode) {
	bin := pgBinDir(t)
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent is 0700, which the postgres user cannot
	// enter when the tests run as root.
	base, err := os.MkdirTemp("", "hlfailover")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if cred != nil {
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name string) *pgNode {
		return &pgNode{t: t, name: name, dir: filepath.Join(base, name), port: loopbackPort(t), bin: bin, cred: cred}
	}
	primary, standby = node("primary"), node("standby")
	primary.run("initdb", "-D", primary.dir, "-U", "hookline", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions", "--no-sync")
	primary.start()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, primary.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE hookline"); err != nil {
		t.Fatal(err)
	}
	standby.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "hookline",
		"-D", standby.dir, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	standby.start()
	// Synchronous once the standby streams: set before, every commit
	// (the CREATE DATABASE above) would wait for a standby that is not
	// there. The standby has no synchronous_standby_names of its own:
	// promoted, it has no standby to wait for.
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 30*time.Second, "the standby streaming synchronously", func() bool {
		var sync bool
		_ = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming')").Scan(&sync)
		return sync
	})
	conn.Close(ctx)
	return primary, standby
}

// failoverLoad posts events to hookline at a steady rate, failoverBatch to
// a request as producers at this rate do, from several clients, each
// request bounded by a deadline, and records every answer.
type failoverLoad struct {
	mu         sync.Mutex
	accepted   map[string]time.Time // event id → when its 202 came
	statuses   map[int]int
	noRetry    int // 503s without Retry-After
	failures   []string
	unanswered int // events of requests that failed or were refused: they may exist
	answers    []answer
}

type answer struct {
	sent, at time.Time
	status   int
}

const failoverDeadline = 10 * time.Second

// failoverBatch is how many events one request carries.
const failoverBatch = 10

// run posts rate events a second, in batches.
func (l *failoverLoad) run(ctx context.Context, addrs []string, key string, rate int) {
	rate /= failoverBatch
	client := &http.Client{Timeout: failoverDeadline}
	// Paced by the clock, not a ticker, which drops the ticks a busy
	// machine misses: each wake-up sends what is due by then.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2000)
	began := time.Now()
	for n := 0; ; n++ {
		// Stopped also when behind its rate: a loaded machine that never
		// catches up never waits below, and the load ran on for 20
		// minutes after the test stopped it.
		if ctx.Err() != nil {
			wg.Wait()
			return
		}
		for n >= int(time.Since(began).Seconds()*float64(rate)) {
			select {
			case <-ctx.Done():
				wg.Wait()
				return
			case <-tick.C:
			}
		}
		select {
		case sem <- struct{}{}:
		default:
			l.mu.Lock()
			l.failures = append(l.failures, "2,000 requests outstanding: the load could not keep its rate")
			l.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l.post(client, addrs[n%len(addrs)], key, n)
		}()
	}
}

func (l *failoverLoad) post(client *http.Client, addr, key string, n int) {
	events := make([]map[string]any, failoverBatch)
	for i := range events {
		events[i] = map[string]any{"type": "order.created", "payload": map[string]any{"n": n, "i": i}}
	}
	body, _ := json.Marshal(map[string]any{"events": events})
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/events/batch", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	resp, err := client.Do(req)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.unanswered += failoverBatch
		l.failures = append(l.failures, fmt.Sprintf("request %d: no answer within %s: %v", n, failoverDeadline, err))
		return
	}
	defer resp.Body.Close()
	l.statuses[resp.StatusCode]++
	l.answers = append(l.answers, answer{sent, time.Now(), resp.StatusCode})
	switch resp.StatusCode {
	case http.StatusAccepted:
		var out struct {
			Results []struct{ ID string } `json:"results"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Results) != failoverBatch {
			l.unanswered += failoverBatch
			l.failures = append(l.failures, fmt.Sprintf("request %d: 202 without %d ids (%v)", n, failoverBatch, err))
			return
		}
		for _, r := range out.Results {
			if r.ID == "" {
				l.failures = append(l.failures, fmt.Sprintf("request %d: 202 with an empty id", n))
				continue
			}
			l.accepted[r.ID] = time.Now()
		}
	case http.StatusServiceUnavailable:
		l.unanswered += failoverBatch
		if resp.Header.Get("Retry-After") == "" {
			l.noRetry++
		}
	default:
		l.unanswered += failoverBatch
		l.failures = append(l.failures, fmt.Sprintf("request %d: %d after %s", n, resp.StatusCode, time.Since(sent).Round(time.Millisecond)))
	}
}

// TestFailoverToSynchronousStandby: hookline on a multi-host URL
// (target_session_attrs=read-write) in front of a primary and its
// synchronous standby. Under steady load the primary is killed (SIGKILL,
// every process) and the standby promoted. Ingest answers 202, or 503 with
// Retry-After, never a 500 and never past its deadline; the worker listens
// again and holds its liveness and shard locks on the new primary;
// deliveries resume within 5 s of the promotion; and every event that was
// answered 202 is delivered.
func TestFailoverToSynchronousStandby(t *testing.T) {
	// Not parallel: deliveries must resume within 5 s of the promotion,
	// under a load of its own that keeps both processors busy.
	// Events a second, ten to a request (failoverBatch), to the hookline
	// binary: the rate the issue asks. Posted one to a request, this 2-core
	// machine kept up with 300/s through the two synchronous servers; a
	// batch is one commit, so 1,000/s is 100 commits/s.
	const rate = 1000
	primary, standby := replicatedPair(t)

	var (
		rmu  sync.Mutex
		seen = map[string][]time.Time{}
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rmu.Lock()
		id := r.Header.Get("webhook-id")
		seen[id] = append(seen[id], time.Now())
		rmu.Unlock()
	}))
	defer rcv.Close()

	url := fmt.Sprintf("postgres://hookline@127.0.0.1:%d,127.0.0.1:%d/hookline?sslmode=disable&target_session_attrs=read-write&connect_timeout=2", primary.port, standby.port)
	env := serveEnv(t, url)
	env["HOOKLINE_METRICS_ADDR"] = "off"
	env["HOOKLINE_METRICS_TOKEN"] = testMetricsToken
	p := startBinary(t, env)
	// A second process on the same database: the shards are shared out
	// between the two, and each must take its own back after the switch.
	env2 := maps.Clone(env)
	env2["HOOKLINE_ADDR"] = freeAddr(t)
	p2 := startBinary(t, env2)
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "failover"))
	_, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"}); status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	waitUntil(t, 30*time.Second, "the two workers owning every shard between them", func() bool {
		return shardsOwned(t, p.addr)+shardsOwned(t, p2.addr) == 256
	})

	load := &failoverLoad{accepted: map[string]time.Time{}, statuses: map[int]int{}}
	ctx, stopLoad := context.WithCancel(context.Background())
	loaded := make(chan struct{})
	go func() { load.run(ctx, []string{p.addr, p2.addr}, key, rate); close(loaded) }()
	defer func() { stopLoad(); <-loaded }()

	time.Sleep(5 * time.Second)
	killed := time.Now()
	primary.kill9()
	// The time an operator or Patroni takes to decide.
	time.Sleep(time.Second)
	standby.run("pg_ctl", "promote", "-D", standby.dir, "-w", "-t", "60")
	promoted := time.Now()
	t.Logf("primary killed; standby promoted %s later", promoted.Sub(killed).Round(time.Millisecond))

	// The workers' sessions on the new primary: their LISTEN and their
	// liveness and shard locks (256 shards and a liveness key each).
	waitUntil(t, 10*time.Second, "the workers' LISTEN and locks on the new primary", func() bool {
		ctxDB, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctxDB, standby.url("hookline"))
		if err != nil {
			return false
		}
		defer c.Close(ctxDB)
		var listening, locks int
		err = c.QueryRow(ctxDB, `SELECT
			(SELECT count(*) FROM pg_stat_activity WHERE datname = 'hookline' AND query = 'LISTEN hookline_deliveries'),
			(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')`).Scan(&listening, &locks)
		return err == nil && listening == 2 && locks >= 258
	})
	// Advisory locks are exclusive, so no shard has two owners; each
	// process's count says every shard has one.
	waitUntil(t, 10*time.Second, "every shard owned again, once", func() bool {
		return shardsOwned(t, p.addr)+shardsOwned(t, p2.addr) == 256
	})
	t.Logf("LISTEN and locks held again %s after the promotion", time.Since(promoted).Round(time.Millisecond))

	time.Sleep(5 * time.Second)
	stopLoad()
	<-loaded
	loadEnded := time.Now()

	load.mu.Lock()
	accepted := load.accepted
	load.mu.Unlock()
	// The backlog of the outage drains through the synchronous pair on a
	// shared machine: seconds alone, up to a minute beside other suites.
	missing := func() (n int) {
		rmu.Lock()
		defer rmu.Unlock()
		for id := range accepted {
			if len(seen[id]) == 0 {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(2 * time.Minute); missing() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accepted events not delivered 2 minutes after the load ended", missing(), len(accepted))
		}
	}
	t.Logf("everything accepted delivered %s after the load ended", time.Since(loadEnded).Round(time.Millisecond))

	rmu.Lock()
	defer rmu.Unlock()
	if testing.Verbose() {
		type bucket struct {
			sent, ok, refused, delivered int
			slowest                      time.Duration
		}
		var b [60]bucket
		slot := func(at time.Time) int {
			return min(59, max(0, int(at.Sub(killed.Add(-3*time.Second))/(500*time.Millisecond))))
		}
		for _, a := range load.answers {
			b[slot(a.sent)].sent++
			b[slot(a.sent)].slowest = max(b[slot(a.sent)].slowest, a.at.Sub(a.sent))
			if a.status == 202 {
				b[slot(a.at)].ok++
			} else {
				b[slot(a.at)].refused++
			}
		}
		for _, at := range seen {
			b[slot(at[0])].delivered++
		}
		for i, x := range b {
			t.Logf("%+5.1fs sent %d (slowest %s) 202 %d 503 %d delivered %d", float64(i)/2-3, x.sent, x.slowest.Round(time.Millisecond), x.ok, x.refused, x.delivered)
		}
	}
	// Deliveries resumed: the first delivery after the promotion (the
	// backlog of the outage is delivered in order, so an event accepted
	// after it may wait its turn).
	var resumed time.Time
	for _, at := range seen {
		for _, a := range at {
			if a.After(promoted) && (resumed.IsZero() || a.Before(resumed)) {
				resumed = a
			}
		}
	}
	if resumed.IsZero() || resumed.Sub(promoted) > 5*time.Second {
		t.Errorf("deliveries resumed %s after the promotion; want within 5 s", resumed.Sub(promoted))
	}
	unknown, twice := 0, 0
	for id, at := range seen {
		if _, ok := accepted[id]; !ok {
			unknown++ // committed, but its answer was lost with the primary
		}
		if len(at) > 1 {
			twice++
		}
	}
	t.Logf("answers %v; %d events accepted (%.0f/s over %s); deliveries resumed %s after the promotion; %d delivered whose request had no 202, %d delivered twice",
		load.statuses, len(accepted), float64(len(accepted))/loadEnded.Sub(killed.Add(-5*time.Second)).Seconds(),
		loadEnded.Sub(killed.Add(-5*time.Second)).Round(time.Second), resumed.Sub(promoted).Round(time.Millisecond), unknown, twice)
	if unknown > load.unanswered {
		t.Errorf("%d events delivered that were never accepted, more than the %d requests left without a 202", unknown, load.unanswered)
	}
	for code, n := range load.statuses {
		if code != http.StatusAccepted && code != http.StatusServiceUnavailable {
			t.Errorf("%d answers %d", n, code)
		}
	}
	if load.noRetry > 0 {
		t.Errorf("%d answers 503 without Retry-After", load.noRetry)
	}
	for i, f := range load.failures {
		if i == 10 {
			t.Errorf("... %d failures in all", len(load.failures))
			break
		}
		t.Error(f)
	}
}

// shardsOwned is the shards a hookline process says its worker owns
// (hookline_worker_shards_owned), or 0 when it does not answer.
func shardsOwned(t *testing.T, addr string) int {
	t.Helper()
	for _, line := range strings.Split(metrics(t, addr), "\n") {
		if v, ok := strings.CutPrefix(line, "hookline_worker_shards_owned "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
