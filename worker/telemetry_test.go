package worker

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/latency"
)

// TestPercentilesMatchPercentileCont: P50/P95/P99 cached in endpoint_health
// (merged log-bucket histograms) agree with PostgreSQL's exact
// percentile_cont over the same attempts within ±2.5 %.
func TestPercentilesMatchPercentileCont(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make(chan time.Duration, 400)
	for range 400 {
		// A long-tailed distribution: mostly 1-10 ms, some 20-60 ms.
		d := time.Duration(1+rng.IntN(9)) * time.Millisecond
		if rng.IntN(10) == 0 {
			d = time.Duration(20+rng.IntN(40)) * time.Millisecond
		}
		delays <- d
	}
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(<-delays)
	})
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL, maxInFlight: 16})
	e.events(400, "order.created", `{}`)
	w := e.worker(nil)
	e.run(w)
	e.waitFor("400 delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 400 })
	ctx := context.Background()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	h := e.health(epID)
	if h.SampleCount != 400 || h.RecentSampleCount != 400 {
		t.Fatalf("samples %d / recent %d, want 400", h.SampleCount, h.RecentSampleCount)
	}
	var p50, p95, p99 float64
	err := e.pool.QueryRow(ctx, `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms),
		percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)
		FROM delivery_attempts WHERE endpoint_id = $1`, epID).Scan(&p50, &p95, &p99)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{{"p50", h.P50Ms, p50}, {"p95", h.P95Ms, p95}, {"p99", h.P99Ms, p99}, {"recent p95", h.RecentP95Ms, p95}} {
		if c.got == nil {
			t.Fatalf("%s missing", c.name)
		}
		if rel := math.Abs(*c.got-c.want) / c.want; rel > 0.025 {
			t.Errorf("%s = %.3f ms, percentile_cont = %.3f ms (%.2f%% off)", c.name, *c.got, c.want, rel*100)
		} else {
			t.Logf("%s = %.3f ms, percentile_cont = %.3f ms (%.2f%% off)", c.name, *c.got, c.want, rel*100)
		}
	}
	// The sparkline has the attempts in its last slots.
	spark, err := e.q.EndpointSparklines(ctx, []int64{epID})
	if err != nil || len(spark) != 1 || len(spark[0].P95) != latency.SparkSlots {
		t.Fatalf("sparkline %+v, %v", spark, err)
	}
	total := 0
	for _, n := range spark[0].Counts {
		total += int(n)
	}
	if total != 400 {
		t.Fatalf("sparkline counts %d attempts, want 400", total)
	}
	// A second flush merges into the same rows instead of replacing them.
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT coalesce(sum(count), 0) FROM latency_histograms WHERE endpoint_id = $1 AND resolution_seconds = 60", epID); n != 400 {
		t.Fatalf("minute rows count %d attempts", n)
	}
}

// TestLatencySamplesSurviveACrash: a worker records attempts and then dies
// before its next histogram flush. The samples were committed with the
// attempts, so the next worker's flush finds every one of them: the
// percentiles do not undercount the moments before a crash.
func TestLatencySamplesSurviveACrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL, maxInFlight: 20})
	e.events(12, "order.created", `{}`)
	ctx := context.Background()

	crashed := e.worker(nil)
	e.sole(crashed)
	rows, err := crashed.claims.claim(ctx, 100, nil)
	if err != nil || len(rows) != 12 {
		t.Fatalf("claimed %d (%v)", len(rows), err)
	}
	batch := make([]outcome, len(rows))
	for i := range rows {
		batch[i] = crashed.dispatch.deliver(ctx, rows[i])
	}
	if err := crashed.complete.flush(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// crashed is never flushed or stopped: it died here.

	next := e.worker(nil)
	if err := next.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	for _, res := range []int{60, 900, 3600} {
		if n := e.count("SELECT coalesce(sum(count), 0)::int FROM latency_histograms WHERE endpoint_id = $1 AND resolution_seconds = $2", epID, res); n != 12 {
			t.Fatalf("%d s histograms hold %d samples, want the 12 attempts", res, n)
		}
	}
	if h := e.health(epID); h.SampleCount != 12 {
		t.Fatalf("24 h sample count %d, want 12", h.SampleCount)
	}
	if n := e.count("SELECT count(*) FROM latency_pending"); n != 0 {
		t.Fatalf("%d pending sample rows left after the flush", n)
	}
	// A second flush merges nothing twice.
	if err := next.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT coalesce(sum(count), 0)::int FROM latency_histograms WHERE endpoint_id = $1 AND resolution_seconds = 60", epID); n != 12 {
		t.Fatalf("after a second flush: %d samples, want 12", n)
	}
}
