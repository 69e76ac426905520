package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/notify"
)

// TestNotifierRateLimitSummarisesFlapping: with an injected clock, a
// breaker that opens again and again within 15 minutes produces one
// notification at once, nothing more inside the window, and then one
// summary standing for the rest; a notification about a channel's own
// endpoint is skipped, and a test goes out whatever the rate limit.
func TestNotifierRateLimitSummarisesFlapping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.PublicURL = "https://hooks.test" })

	partnerEp, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/partner"})
	channelEp, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/channel"})
	var channelID int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO notification_channels (name, style, endpoint_id, kinds)
		VALUES ('ops', 'chat', $1, '{breaker.opened}') RETURNING id`, channelEp).Scan(&channelID); err != nil {
		t.Fatal(err)
	}
	opened := func(endpointID int64) {
		t.Helper()
		now := clk.Now()
		if err := e.q.NotificationInsertBatch(ctx, db.NotificationInsertBatchParams{Now: &now,
			Kinds: []string{string(notify.BreakerOpened)}, EndpointIds: []int64{endpointID}, Subjects: []string{""},
			Figures: []json.RawMessage{json.RawMessage(`{"consecutive_failures": 10}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	held := map[notifyKey]time.Time{}
	dispatch := func() {
		t.Helper()
		if err := w.notifier.dispatchNotifications(ctx, held); err != nil {
			t.Fatal(err)
		}
	}
	sent := func() []string {
		t.Helper()
		rows, err := e.pool.Query(ctx, `SELECT ev.payload::text FROM deliveries d JOIN events ev ON ev.id = d.event_id
			WHERE d.endpoint_id = $1 ORDER BY d.id`, channelEp)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			var body map[string]string
			if err := json.Unmarshal([]byte(s), &body); err != nil || len(body) != 1 {
				t.Fatalf("chat body %s", s)
			}
			out = append(out, body["text"])
		}
		return out
	}

	t.Run("first goes out", func(t *testing.T) {
		opened(partnerEp)
		dispatch()
		if got := sent(); len(got) != 1 {
			t.Fatalf("sent %q", got)
		}
	})
	t.Run("flapping inside the window is held", func(t *testing.T) {
		for range 3 {
			clk.Advance(4 * time.Minute)
			opened(partnerEp)
			dispatch()
		}
		if got := sent(); len(got) != 1 {
			t.Fatalf("sent inside the window: %q", got)
		}
	})
	t.Run("after the window one summary", func(t *testing.T) {
		clk.Advance(3 * time.Minute) // 15 min after the first
		dispatch()
		got := sent()
		if len(got) != 2 {
			t.Fatalf("sent %q, want the first and one summary", got)
		}
		if want := "2 more like this"; !contains(got[1], want) || !contains(got[1], "https://hooks.test/endpoints/") {
			t.Fatalf("summary %q lacks %q and a link", got[1], want)
		}
		if n := e.count(`SELECT count(*) FROM notifications WHERE state = 'suppressed'`); n != 2 {
			t.Fatalf("%d suppressed rows, want 2", n)
		}
	})
	t.Run("a channel's own endpoint is not notified about", func(t *testing.T) {
		opened(channelEp)
		dispatch()
		if n := e.count(`SELECT count(*) FROM notifications WHERE state = 'skipped' AND endpoint_id = $1`, channelEp); n != 1 {
			t.Fatal("notification about the channel's own endpoint not skipped")
		}
	})
	t.Run("a test is sent at once", func(t *testing.T) {
		if err := e.q.NotificationInsertTest(ctx, &channelID); err != nil {
			t.Fatal(err)
		}
		dispatch()
		if got := sent(); len(got) != 3 || !contains(got[2], "Test notification") {
			t.Fatalf("sent %q", got)
		}
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestBreakerTransitionsQueueNotifications: the completion that opens a
// breaker writes one breaker.opened outbox row, a failed probe writes none
// (the breaker was open already), and the probe that closes it writes one
// breaker.closed row.
func TestBreakerTransitionsQueueNotifications(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(503))
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL, threshold: 3, maxInFlight: 1, maxAttempts: 50})
	e.events(5, "order.created", `{}`)
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0) })
	e.run(w)
	ctx := context.Background()
	rows := func(kind string) int {
		return e.count("SELECT count(*) FROM notifications WHERE kind = $1 AND endpoint_id = $2", kind, epID)
	}
	e.waitFor("breaker open", func() bool { return e.health(epID).State == "open" })
	if n := rows("breaker.opened"); n != 1 {
		t.Fatalf("%d breaker.opened rows, want 1", n)
	}
	clk.Advance(301 * time.Second)
	w.claims.probe(ctx)
	e.waitFor("failed probe recorded", func() bool {
		return rcv.count.Load() == 4 && e.health(epID).State == "open" && e.health(epID).ProbeDeliveryID == nil
	})
	if n := rows("breaker.opened"); n != 1 {
		t.Fatalf("a failed probe queued another breaker.opened (%d rows)", n)
	}
	rcv.setHandler(respond(200))
	clk.Advance(601 * time.Second)
	w.claims.probe(ctx)
	e.waitFor("closed", func() bool { return e.health(epID).State == "closed" })
	if n := rows("breaker.closed"); n != 1 {
		t.Fatalf("%d breaker.closed rows, want 1", n)
	}
}
