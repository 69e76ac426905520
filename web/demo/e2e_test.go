package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/demo"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/simulate"
	"github.com/hookline/hookline/worker/ssrf"
)

// promise is what `hookline demo` promises a new user: within this time of
// the start, live sparklines, an open breaker and dead-letter clusters.
const promise = 10 * time.Second

// slack absorbs a loaded test machine (make test runs packages in
// parallel, under -race); the measured times are logged.
const slack = 10 * time.Second

// apiCall calls the hookline API and decodes a 2xx answer into out.
func apiCall(t *testing.T, base, key, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

type cluster struct {
	Key        string `json:"key"`
	EndpointID int64  `json:"endpoint_id"`
	StatusCode int    `json:"status_code"`
	ErrorClass string `json:"error_class"`
	Count      int    `json:"count"`
	Diagnosis  struct {
		Pattern string `json:"pattern"`
	} `json:"diagnosis"`
}

// waitFor polls cond until it holds, failing the test after limit; it
// returns how long after start cond first held.
func waitFor(t *testing.T, what string, start time.Time, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("no %s %v after the start", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("%-40s after %v", what, took.Round(10*time.Millisecond))
	return took
}

func deliveredCount(t *testing.T, pool *pgxpool.Pool, ids []int64) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM deliveries WHERE id = ANY($1) AND status = 'delivered'`, ids).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDemoEndToEnd runs what `hookline demo` runs, against a real hookline
// API and worker on a fresh database: it holds the demo to its promise and
// replays dead letters the two ways the demo teaches.
func TestDemoEndToEnd(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	secretKey := bytes.Repeat([]byte{7}, 32)
	guard := ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}) // HOOKLINE_ALLOW_NETWORKS
	srv, err := web.New(web.Config{
		Pool: pool, SecretKey: secretKey, SessionKey: bytes.Repeat([]byte{8}, 32), Guard: guard,
		MaxBodyBytes: 256 << 10, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	defer api.Close()
	key, _, err := account.CreateAPIKey(ctx, pool, "demo", "test")
	if err != nil {
		t.Fatal(err)
	}
	var logs demo.LogBuffer
	defer func() {
		if t.Failed() {
			t.Logf("demo log:\n%s", logs.String())
		}
	}()

	start := time.Now()
	recv, err := simulate.Start(demo.Receivers(demo.DefaultRate), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	o := demo.Options{BaseURL: api.URL, APIKey: key, Receivers: recv, Pool: pool, Seed: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ids, err := demo.Seed(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.BackfillLatency(ctx, o, ids); err != nil {
		t.Fatal(err)
	}
	// The worker starts after the backfill, so its first health refresh
	// (a second after it starts) already draws the sparklines.
	w, err := worker.New(worker.Config{Pool: pool, SecretKey: secretKey, Guard: guard, UserAgent: "hookline/test",
		ShutdownGrace: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	sctx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan error, 1)
	go func() { streamDone <- demo.Stream(sctx, o) }()
	defer func() {
		stopStream()
		if err := <-streamDone; err != nil {
			t.Errorf("Stream: %v", err)
		}
		stopWorker()
		if err := <-workerDone; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()

	clusters := func() []cluster {
		var out struct{ Clusters []cluster }
		apiCall(t, api.URL, key, "GET", "/api/v1/dead-letters/clusters", nil, &out)
		return out.Clusters
	}
	clusterOf := func(endpoint string, status int) *cluster {
		for _, c := range clusters() {
			if c.EndpointID == ids[endpoint] && (status == 0 || c.StatusCode == status) {
				return &c
			}
		}
		return nil
	}

	var took []time.Duration
	took = append(took, waitFor(t, "sparklines for every endpoint", start, promise+slack, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM endpoint_sparklines WHERE endpoint_id = ANY($1)`,
			[]int64{ids[demo.AcmeOrders], ids[demo.AcmeInvoices], ids[demo.ClickwaveKeitaro], ids[demo.LegacyCRM]}).Scan(&n)
		return err == nil && n == 4
	}))
	took = append(took, waitFor(t, "LegacyCRM breaker open", start, promise+slack, func() bool {
		var e struct{ Health struct{ State string } }
		apiCall(t, api.URL, key, "GET", fmt.Sprintf("/api/v1/endpoints/%d", ids[demo.LegacyCRM]), nil, &e)
		return e.Health.State == "open"
	}))
	took = append(took, waitFor(t, "PartnerAuth 401 dead-letter cluster", start, promise+slack, func() bool {
		c := clusterOf(demo.PartnerAuth, 401)
		return c != nil && c.Diagnosis.Pattern == "credentials"
	}))
	for _, d := range took {
		if d > promise {
			t.Logf("over the %v promise (tolerated on a loaded machine): %v", promise, d)
		}
	}

	t.Run("replaying a flaky partner's dead letters works", func(t *testing.T) {
		// s2s has max_attempts 1: each of its ~5 % failures is a dead letter.
		waitFor(t, "Flaky Affiliates s2s dead letters", start, time.Minute, func() bool { return clusterOf(demo.FlakyS2S, 0) != nil })
		var replayed []int64
		for _, c := range clusters() {
			if c.EndpointID != ids[demo.FlakyS2S] {
				continue
			}
			var res struct {
				Replayed    int     `json:"replayed"`
				DeliveryIDs []int64 `json:"delivery_ids"`
			}
			apiCall(t, api.URL, key, "POST", "/api/v1/dead-letters/replay", map[string]any{"cluster": c.Key}, &res)
			replayed = append(replayed, res.DeliveryIDs...)
		}
		if len(replayed) == 0 {
			t.Fatal("nothing replayed")
		}
		waitFor(t, fmt.Sprintf("a replayed s2s delivery delivered (of %d)", len(replayed)), time.Now(), 20*time.Second,
			func() bool { return deliveredCount(t, pool, replayed) > 0 })
	})

	t.Run("fixing PartnerAuth's token, then replaying, works", func(t *testing.T) {
		id := ids[demo.PartnerAuth]
		apiCall(t, api.URL, key, "PATCH", fmt.Sprintf("/api/v1/endpoints/%d", id),
			map[string]any{"headers": map[string]string{"Authorization": "Bearer " + demo.PartnerAuthToken}}, nil)
		apiCall(t, api.URL, key, "POST", fmt.Sprintf("/api/v1/endpoints/%d/force-close", id), nil, nil)
		c := clusterOf(demo.PartnerAuth, 401)
		var res struct {
			DeliveryIDs []int64 `json:"delivery_ids"`
		}
		apiCall(t, api.URL, key, "POST", "/api/v1/dead-letters/replay", map[string]any{"cluster": c.Key}, &res)
		if len(res.DeliveryIDs) == 0 {
			t.Fatal("nothing replayed")
		}
		waitFor(t, fmt.Sprintf("all %d replayed PartnerAuth deliveries delivered", len(res.DeliveryIDs)), time.Now(), 20*time.Second,
			func() bool { return deliveredCount(t, pool, res.DeliveryIDs) == len(res.DeliveryIDs) })
	})

	t.Run("the receivers saw the failure modes", func(t *testing.T) {
		for _, k := range []string{demo.AcmeOrders, demo.AcmeInvoices, demo.ClickwaveKeitaro, demo.LegacyCRM, demo.PartnerAuth} {
			if r, _ := recv.Stats(k); r == 0 {
				t.Errorf("%s got no requests", k)
			}
		}
		if r, f := recv.Stats(demo.LegacyCRM); f != r {
			t.Errorf("LegacyCRM: %d of %d failed, want all", f, r)
		}
	})

	t.Run("seeding again reuses everything", func(t *testing.T) {
		again, err := demo.Seed(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range ids {
			if again[k] != id {
				t.Errorf("%s: %d, first %d", k, again[k], id)
			}
		}
	})

	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", logs.String())
	}
}
