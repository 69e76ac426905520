package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestScaleSmall runs -scale at a tiny size: the reference comes first,
// then the endpoint and the retained-rows cases; every case drained every
// delivery and delivered every event of its steady rate, the retained rows
// are in the database beside them, and the table names every case with its
// ratios.
func TestScaleSmall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	url := dbtest.URL(t)
	r, err := Scale(context.Background(), ScaleOptions{
		Reference: 4, Endpoints: []int{40}, Retained: []int64{3000}, Deliveries: 200,
		Rate: 50, Duration: time.Second, Warmup: 200 * time.Millisecond, Concurrency: 16, DatabaseURL: url,
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	want := []ScaleCase{{Endpoints: 4}, {Endpoints: 40}, {Endpoints: 4, Retained: 3000}}
	if len(r.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(r.Cases), len(want))
	}
	for i, c := range r.Cases {
		if c.Endpoints != want[i].Endpoints || c.Retained != want[i].Retained {
			t.Errorf("case %d: %s, want %s", i, c.Name(), want[i].Name())
		}
		if c.Drain.Count != 200 || c.Drain.PerSecond() <= 0 || c.WorkerCPU <= 0 {
			t.Errorf("%s: drain %+v, CPU per delivery %v", c.Name(), c.Drain, c.WorkerCPU)
		}
		s := c.Steady
		if s.Events == 0 || s.Delivered != s.Deliveries || s.Deliveries != s.Events || s.EnqueueToAttempt.Count != s.Delivered || s.EnqueueToAttempt.P50 <= 0 {
			t.Errorf("%s: steady rate %d events, %d deliveries, %d delivered, %+v", c.Name(), s.Events, s.Deliveries, s.Delivered, s.EnqueueToAttempt)
		}
		if !strings.Contains(out.String(), c.Name()) {
			t.Errorf("the report names no %q", c.Name())
		}
	}
	// The last case's retained rows, each with its event and attempt, are
	// there beside its own deliveries, all delivered, in the partitions.
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var delivered, attempts, events, undelivered int64
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM deliveries_delivered), (SELECT count(*) FROM delivery_attempts),
		(SELECT count(*) FROM events), (SELECT count(*) FROM deliveries_queue)`).Scan(&delivered, &attempts, &events, &undelivered); err != nil {
		t.Fatal(err)
	}
	if last := r.Cases[2]; delivered < 3000+200+int64(last.Steady.Deliveries) || attempts != delivered || events != delivered || undelivered != 0 {
		t.Errorf("after the last case: %d delivered, %d attempts, %d events, %d undelivered", delivered, attempts, events, undelivered)
	}
	if !strings.Contains(out.String(), "(0 of them in a default partition)") {
		t.Errorf("retained rows went to a default partition")
	}
	for _, h := range []string{"worker µs/delivery", "PostgreSQL µs/delivery", "enqueue→1st p99 ms", "1.00×"} {
		if !strings.Contains(out.String(), h) {
			t.Errorf("the table lacks %q", h)
		}
	}
}
