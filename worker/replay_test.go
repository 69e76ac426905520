package worker

import (
	"context"
	"testing"

	"github.com/hookline/hookline/db"
)

// TestBulkReplayBatches: a bulk replay re-queues exactly the deliveries
// its filter matched, in batches of replayBatch, each at most once (a
// delivered one that the replay sends and that is delivered again is not
// taken a second time), and then ends as done with its count.
func TestBulkReplayBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ep, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/in"})
	other, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/other"})
	e.events(replayBatch+150, "order.paid", `{"click_id": "c1"}`)
	e.events(40, "lead.created", `{}`)
	// Everything delivered; the job resends order.paid to ep only.
	if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1`); err != nil {
		t.Fatal(err)
	}
	typ := "order.*"
	job, err := e.q.ReplayJobCreate(ctx, db.ReplayJobCreateParams{Status: "delivered", EndpointID: &ep, EventType: &typ, Total: replayBatch + 150, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(nil)
	for step := 1; ; step++ {
		wrote, err := w.ReplayStepNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		j, err := e.q.ReplayJobGet(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch step {
		case 1:
			if !wrote || j.Replayed != replayBatch || j.State != "running" {
				t.Fatalf("after the first step: %+v", j)
			}
			// What the first batch re-queued is delivered again before
			// the next step: it must not be taken twice.
			if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE replayed_at = $1`, j.Stamp); err != nil {
				t.Fatal(err)
			}
		case 2:
			if !wrote || j.Replayed != replayBatch+150 || j.State != "done" || j.FinishedAt == nil {
				t.Fatalf("after the second step: %+v", j)
			}
		}
		if j.State == "done" {
			break
		}
		if step > 2 {
			t.Fatalf("the replay did not end: %+v", j)
		}
	}
	if wrote, err := w.ReplayStepNow(ctx); err != nil || wrote {
		t.Fatalf("a step with no running job: wrote %v, %v", wrote, err)
	}
	if n := e.count(`SELECT count(*) FROM deliveries WHERE replay_count = 1 AND endpoint_id = $1`, ep); n != replayBatch+150 {
		t.Fatalf("%d deliveries replayed once, want %d", n, replayBatch+150)
	}
	if n := e.count(`SELECT count(*) FROM deliveries WHERE replay_count > 1 OR (replay_count > 0 AND endpoint_id = $1)`, other); n != 0 {
		t.Fatalf("%d deliveries replayed outside the filter or twice", n)
	}
	if n := e.count(`SELECT count(*) FROM deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.replay_count > 0 AND ev.type <> 'order.paid'`); n != 0 {
		t.Fatalf("%d deliveries of another type replayed", n)
	}
}

// TestBulkReplayDelivers: a running worker re-queues a dead-letter job's
// deliveries and sends them, with the same webhook-id.
func TestBulkReplayDelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rcv := newReceiver(t)
	ep, _ := e.endpoint(endpointOpts{url: rcv.URL})
	ids := e.events(30, "order.paid", `{}`)
	if _, err := e.pool.Exec(ctx, `UPDATE deliveries SET status = 'dead', dead_at = now(), attempt_count = 5`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.ReplayJobCreate(ctx, db.ReplayJobCreateParams{Status: "dead", EndpointID: &ep, Total: 30, CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	stop := e.run(e.worker(nil))
	defer stop()
	e.waitFor("every replayed dead letter delivered", func() bool {
		return e.count(`SELECT count(*) FROM deliveries WHERE status = 'delivered' AND replay_count = 1`) == 30
	})
	got := map[string]bool{}
	for _, r := range rcv.all() {
		got[r.Header.Get("Webhook-Id")] = true
	}
	for _, id := range ids {
		if !got[id.String()] {
			t.Fatalf("event %s was not sent again with its webhook-id", id)
		}
	}
}
