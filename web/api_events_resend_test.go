package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

type resendBody struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

// TestAPIResendReachesReceiver: a delivered delivery resent is sent again
// by the worker with the same webhook-id, as a new attempt, and audited.
func TestAPIResendReachesReceiver(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	rcv := newHookReceiver(t, http.StatusOK, 0, "ok")
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": rcv.URL + "/in"})
	env.startWorker()
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "9f1c2e"}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	del := ev.Deliveries[0].ID
	env.waitDB("first delivery", 15*time.Second, `SELECT status = 'delivered' FROM deliveries WHERE id = $1`, del)

	rec = env.do(http.MethodPost, fmt.Sprintf("/api/v1/deliveries/%d/resend", del), nil)
	mustStatus(t, rec, http.StatusAccepted)
	if b := decodeBody[resendBody](t, rec); b.ID != del || b.Status != "pending" {
		t.Fatalf("%+v", b)
	}
	env.waitDB("the resend delivered", 15*time.Second,
		`SELECT status = 'delivered' AND attempt_count = 2 FROM deliveries WHERE id = $1`, del)
	got := rcv.requests()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	for _, r := range got {
		if r.WebhookID != ev.ID || r.Path != "/in" {
			t.Fatalf("request %s with webhook-id %q, want the event id %q", r.Path, r.WebhookID, ev.ID)
		}
	}
	var attempts []int32
	rows, err := env.pool.Query(context.Background(), `SELECT attempt_no FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt_no`, del)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n int32
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, n)
	}
	if fmt.Sprint(attempts) != "[1 2]" {
		t.Fatalf("attempts %v", attempts)
	}
	var actor, details string
	if err := env.pool.QueryRow(context.Background(), `SELECT actor, details::text FROM audit_log
		WHERE action = 'delivery.resend' AND target_type = 'delivery' AND target_id = $1`, fmt.Sprint(del)).Scan(&actor, &details); err != nil {
		t.Fatalf("audit: %v", err)
	}
	if actor == "" || !containsAll(details, ev.ID, `"previous_status": "delivered"`, fmt.Sprintf(`"endpoint_id": %d`, ep.ID)) {
		t.Fatalf("audit %s %s", actor, details)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestAPIResendStates(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://hooks.acme.test/in", "max_attempts": 3})
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
	mustStatus(t, rec, http.StatusAccepted)
	del := decodeBody[acceptedBody](t, rec).Deliveries[0].ID
	path := fmt.Sprintf("/api/v1/deliveries/%d/resend", del)

	t.Run("dead: a fresh attempt budget, due now", func(t *testing.T) {
		env.exec(`UPDATE deliveries SET status = 'dead', dead_at = now(), attempt_count = 3,
			next_attempt_at = now() + interval '1 day' WHERE id = $1`, del)
		mustStatus(t, env.do(http.MethodPost, path, nil), http.StatusAccepted)
		env.waitDB("reset", time.Second, `SELECT status = 'pending' AND dead_at IS NULL AND max_attempts = 6 AND attempt_count = 3
			AND next_attempt_at <= now() AND replay_count = 1 FROM deliveries WHERE id = $1`, del)
	})
	t.Run("delivered", func(t *testing.T) {
		env.exec(`UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE id = $1`, del)
		mustStatus(t, env.do(http.MethodPost, path, nil), http.StatusAccepted)
		env.waitDB("reset", time.Second, `SELECT status = 'pending' AND delivered_at IS NULL AND replay_count = 2 FROM deliveries WHERE id = $1`, del)
	})
	t.Run("pending or awaiting retry: due now", func(t *testing.T) {
		env.exec(`UPDATE deliveries SET status = 'failed', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, del)
		mustStatus(t, env.do(http.MethodPost, path, nil), http.StatusAccepted)
		env.waitDB("due", time.Second, `SELECT status = 'pending' AND next_attempt_at <= now() FROM deliveries WHERE id = $1`, del)
	})
	t.Run("in flight: 409, unchanged", func(t *testing.T) {
		env.exec(`UPDATE deliveries SET status = 'in_flight', lease_expires_at = now() + interval '1 minute' WHERE id = $1`, del)
		mustError(t, env.do(http.MethodPost, path, nil), http.StatusConflict, "")
		env.waitDB("unchanged", time.Second, `SELECT status = 'in_flight' AND replay_count = 3 FROM deliveries WHERE id = $1`, del)
		var n int
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'delivery.resend'`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("%d resends audited (%v), want 3", n, err)
		}
	})
	t.Run("unknown: 404", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/deliveries/999999/resend", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodPost, "/api/v1/deliveries/12abc/resend", nil), http.StatusNotFound, "")
	})
	t.Run("needs a key", func(t *testing.T) {
		mustStatus(t, env.do(http.MethodPost, path, nil, "Authorization", ""), http.StatusUnauthorized)
	})
}

// TestAPIResendMeetsCompletion: a resend that waits for a delivery being
// recorded as delivered (which moves its row into deliveries_delivered)
// is answered 409, try again, and changes nothing; tried again, it
// resends.
func TestAPIResendMeetsCompletion(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "http://127.0.0.1:1/in"})
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{}})
	mustStatus(t, rec, http.StatusAccepted)
	del := decodeBody[acceptedBody](t, rec).Deliveries[0].ID
	ctx := context.Background()

	// The completion, holding the row.
	tx, err := env.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1 WHERE id = $1`, del); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() {
		rec := env.do(http.MethodPost, fmt.Sprintf("/api/v1/deliveries/%d/resend", del), nil)
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "try again") {
			t.Errorf("resend meeting the completion: %d %s, want 409", rec.Code, rec.Body.String())
		}
		done <- rec.Code
	}()
	env.waitDB("the resend to wait for the row", 10*time.Second,
		`SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	env.waitDB("the delivery delivered, not resent", time.Second,
		`SELECT status = 'delivered' AND replay_count = 0 FROM deliveries WHERE id = $1`, del)
	rec = env.do(http.MethodPost, fmt.Sprintf("/api/v1/deliveries/%d/resend", del), nil)
	mustStatus(t, rec, http.StatusAccepted)
}
