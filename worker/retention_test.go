package worker

import (
	"context"
	"testing"
	"time"
)

func TestRetentionDeletesOldRowsInBatches(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	e.events(20, "order.created", `{}`)
	w := e.worker(nil)
	e.run(w)
	e.waitFor("delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 20 })
	ctx := context.Background()
	if err := w.RefreshNow(ctx); err != nil {
		t.Fatal(err)
	}
	// Age half of everything past its retention; dead letters are kept.
	old := time.Now().Add(-8 * 24 * time.Hour)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec("UPDATE deliveries SET delivered_at = $1 WHERE id % 2 = 0", old)
	exec("UPDATE delivery_attempts SET started_at = $1 WHERE delivery_id % 2 = 0", old)
	exec("UPDATE events SET created_at = $1", old)
	exec("UPDATE deliveries SET status = 'dead', dead_at = $1, delivered_at = NULL WHERE id = 1", old)
	exec("INSERT INTO latency_histograms (endpoint_id, resolution_seconds, bucket_start) VALUES ($1, 60, $2), ($1, 3600, $2), ($1, 3600, $3)",
		epID, time.Now().Add(-49*time.Hour), time.Now().Add(-31*24*time.Hour))

	if err := w.RetainNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM deliveries"); n != 10 { // 9 recent + the dead letter
		t.Fatalf("deliveries left: %d, want 10", n)
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts"); n != 10 {
		t.Fatalf("attempts left: %d, want 10", n)
	}
	if n := e.count("SELECT count(*) FROM events"); n != 10 { // events with a delivery left
		t.Fatalf("events left: %d, want 10", n)
	}
	if n := e.count("SELECT count(*) FROM latency_histograms WHERE bucket_start < now() - interval '48 hours'"); n != 1 {
		t.Fatalf("old histogram rows left: %d, want 1 (the hourly one within 30 days)", n)
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'"); n != 1 {
		t.Fatal("a dead letter was deleted")
	}
}
