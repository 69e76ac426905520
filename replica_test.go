package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDashboardReadsOnReplica: hookline with HOOKLINE_READ_DATABASE_URL on
// a streaming replica of its primary. The event log, overview and endpoint
// pages read from the replica (its sessions run their statements, the
// primary's do not); with replay paused a write shows at once where the
// primary serves it (the page a form post redirects to, an event's own
// page) and not on the replica-read pages, which carry the lag notice once
// the lag passes HOOKLINE_READ_LAG_NOTICE, as /metrics does; replay
// resumed, the replica catches up and the notice goes; the replica
// stopped, the same pages answer 200 from the primary.
func TestDashboardReadsOnReplica(t *testing.T) {
	t.Parallel()
	primary, standby := replicatedPair(t)
	ctx := context.Background()
	pc := pgConn(t, primary.url("hookline"))
	sc := pgConn(t, standby.url("hookline"))
	// A read replica is asynchronous: its paused replay must not be what
	// the primary's commits wait for (synchronous_commit = on waits for
	// the standby's flush only, but a read replica is no failover target).
	for _, sql := range []string{"ALTER SYSTEM RESET synchronous_standby_names", "SELECT pg_reload_conf()"} {
		if _, err := pc.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer rcv.Close()
	env := serveEnv(t, primary.url("hookline"))
	env["HOOKLINE_READ_DATABASE_URL"] = standby.url("hookline")
	env["HOOKLINE_READ_LAG_NOTICE"] = "2s"
	env["HOOKLINE_METRICS_ADDR"] = "off"
	env["HOOKLINE_METRICS_TOKEN"] = testMetricsToken
	p := startBinary(t, env)
	base := "http://" + p.addr
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "replica"))
	command(t, env, "correct horse battery staple\n", "user", "add", "--email", "ops@hookline.test", "--role", "admin", "--password-stdin")
	_, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"})
	if status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	epPath := "/endpoints/" + strconv.FormatInt(int64(ep["id"].(float64)), 10)
	first := signIn(t, base)
	second := signIn(t, base)

	waitUntil(t, 30*time.Second, "the replica measured", func() bool {
		return strings.Contains(metrics(t, p.addr), "hookline_read_replica_up 1")
	})
	waitUntil(t, 30*time.Second, "the endpoint on the replica's endpoints page", func() bool {
		return strings.Contains(first.get(t, "/endpoints", 200), epPath)
	})

	t.Run("the replica-read pages run on the replica", func(t *testing.T) {
		// The replica counts the scans its own sessions make of each
		// table (reported within about a second of a session going idle).
		scans := func() int64 {
			var n int64
			if err := sc.QueryRow(ctx, "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::bigint FROM pg_stat_user_tables WHERE relname = 'endpoints'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := scans()
		first.get(t, "/audit/export.csv", 200)
		for _, path := range []string{"/", "/events", "/endpoints", epPath} {
			if page := first.get(t, path, 200); strings.Contains(page, `data-testid="replica-lag"`) {
				t.Fatalf("%s: lag notice on a replica that is caught up", path)
			}
		}
		waitUntil(t, 15*time.Second, "the pages' scans of endpoints counted on the replica", func() bool {
			return scans() > before
		})
		var onPrimary, onReplica int
		q := "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hookline reads'"
		if err := pc.QueryRow(ctx, q).Scan(&onPrimary); err != nil {
			t.Fatal(err)
		}
		if err := sc.QueryRow(ctx, q).Scan(&onReplica); err != nil {
			t.Fatal(err)
		}
		if onPrimary != 0 || onReplica == 0 {
			t.Errorf("the replica's pool has %d sessions on the primary and %d on the replica", onPrimary, onReplica)
		}
	})

	if _, err := sc.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	status, ev := api(t, p.addr, key, "POST", "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
	if status != 202 {
		t.Fatalf("event: %d %v", status, ev)
	}
	evID := ev["id"].(string)

	t.Run("a write shows at once where the primary serves it", func(t *testing.T) {
		// Not on the replica yet: the event's own page asks the primary.
		if page := first.get(t, "/events/"+evID, 200); !strings.Contains(page, evID) {
			t.Fatal("the event's page does not show the event")
		}
		// The page a form post redirects to reads back the post.
		page := first.post(t, epPath+"/pause", url.Values{"confirmed": {"yes"}}, 200)
		if !strings.Contains(page, `data-testid="breaker-resume"`) {
			t.Fatal("the endpoint's page after pausing it does not show it paused")
		}
		if page := first.get(t, epPath, 200); !strings.Contains(page, `data-testid="breaker-resume"`) {
			t.Fatal("the endpoint's page read again after pausing it does not show it paused")
		}
		// Another user reads the replica, which has not replayed either.
		if page := second.get(t, epPath, 200); strings.Contains(page, `data-testid="breaker-resume"`) {
			t.Fatal("the replica-read page of another user shows the pause: it did not read from the paused replica")
		}
		if page := second.get(t, "/events", 200); strings.Contains(page, evID) {
			t.Fatal("the replica-read event log shows an event ingested after replay was paused")
		}
	})

	t.Run("the lag is shown when it passes the notice", func(t *testing.T) {
		// Writes the replica has not replayed: its data ages from the
		// first of them. An idle primary is no lag, whatever the pause.
		waitUntil(t, 20*time.Second, "the lag measured past 2 s", func() bool {
			return replicaLag(metrics(t, p.addr)) >= 2
		})
		for _, path := range []string{"/", "/events", "/endpoints", epPath} {
			page := second.get(t, path, 200)
			if !strings.Contains(page, `data-testid="replica-lag"`) {
				t.Errorf("%s: no lag notice %s after replay was paused", path, time.Since(paused).Round(time.Millisecond))
			}
		}
	})

	if _, err := sc.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	t.Run("replay resumed, the replica catches up", func(t *testing.T) {
		waitUntil(t, 20*time.Second, "the replica caught up", func() bool {
			page := second.get(t, epPath, 200)
			return strings.Contains(page, `data-testid="breaker-resume"`) && !strings.Contains(page, `data-testid="replica-lag"`)
		})
		if lag := replicaLag(metrics(t, p.addr)); lag >= 2 {
			t.Errorf("lag %.1f s after catching up", lag)
		}
	})

	t.Run("the replica down, the primary answers", func(t *testing.T) {
		sc.Close(ctx)
		standby.stop()
		for i := range 20 {
			for _, path := range []string{"/events", "/endpoints", epPath} {
				second.get(t, path, 200)
			}
			if i == 0 {
				waitUntil(t, 10*time.Second, "the replica seen down", func() bool {
					return strings.Contains(metrics(t, p.addr), "hookline_read_replica_up 0")
				})
			}
		}
		if page := second.get(t, "/events", 200); !strings.Contains(page, evID) {
			t.Fatal("the event log from the primary does not show the event")
		}
	})
}

func pgConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// replicaLag reads hookline_read_replica_lag_seconds from a scrape (-1
// when absent).
func replicaLag(scrape string) float64 {
	m := regexp.MustCompile(`(?m)^hookline_read_replica_lag_seconds ([0-9.e+-]+)$`).FindStringSubmatch(scrape)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// dashboardClient is a signed-in dashboard user: its cookies, and the
// CSRF token of the last page.
type dashboardClient struct {
	base string
	c    *http.Client
	csrf string
}

// signIn signs ops@hookline.test in with a fresh cookie jar.
func signIn(t *testing.T, base string) *dashboardClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &dashboardClient{base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	page := d.get(t, "/login", 200)
	m := regexp.MustCompile(`name="login_token" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no login token on the login page")
	}
	d.post(t, "/login", url.Values{"login_token": {m[1]}, "email": {"ops@hookline.test"}, "password": {"correct horse battery staple"}}, 200)
	if d.csrf == "" {
		t.Fatal("signed in, but no CSRF token on the page after")
	}
	return d
}

var csrfMeta = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

func (d *dashboardClient) do(t *testing.T, req *http.Request, want int) string {
	t.Helper()
	res, err := d.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d\n%.2000s", req.Method, req.URL.Path, res.StatusCode, want, b)
	}
	if m := csrfMeta.FindSubmatch(b); m != nil {
		d.csrf = string(m[1])
	}
	return string(b)
}

// get fetches path and wants status.
func (d *dashboardClient) get(t *testing.T, path string, want int) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, d.base+path, nil)
	return d.do(t, req, want)
}

// post posts form (with the CSRF token) to path, follows the redirect and
// wants status at the end.
func (d *dashboardClient) post(t *testing.T, path string, form url.Values, want int) string {
	t.Helper()
	if d.csrf != "" {
		form.Set("csrf_token", d.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, d.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return d.do(t, req, want)
}
