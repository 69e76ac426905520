package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/signing"
)

// notificationsReceived decodes the notification documents a channel
// receiver got, checking each signature with the channel's secret.
func notificationsReceived(t *testing.T, r *hookReceiver, secret string) []notify.Document {
	t.Helper()
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	var out []notify.Document
	for _, h := range r.requests() {
		if err := signing.Verify(key, h.Header, h.Body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("notification signature does not verify: %v", err)
		}
		var d notify.Document
		if err := json.Unmarshal(h.Body, &d); err != nil {
			t.Fatalf("notification body %q: %v", h.Body, err)
		}
		out = append(out, d)
	}
	return out
}

// countKinds tallies documents by "kind subject".
func countKinds(docs []notify.Document) map[string]int {
	n := map[string]int{}
	for _, d := range docs {
		n[strings.TrimSpace(string(d.Kind)+" "+d.Subject)]++
	}
	return n
}

// waitFor polls cond (a condition on something the test observes) until
// it holds.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The failure budget end to end: an endpoint with disable_after_failures 4
// and disable_after_hours 0 against a failing loopback receiver is warned at
// 2 and 3 failures (each notification received once by a loopback channel,
// signed), disabled at 4; events posted while it is disabled are queued,
// not dead and not sent; enabling it again delivers every one of them.
func TestFailureBudgetWarnsDisablesHoldsAndReleases(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	partner := env.createPartner("Budget partner")

	channel := newHookReceiver(t, http.StatusOK, 0, "")
	rec := env.do(http.MethodPost, "/api/v1/notification-channels", map[string]any{
		"name": "ops", "style": "webhook", "url": channel.URL,
		"kinds": []string{"endpoint.warned", "endpoint.disabled", "endpoint.enabled"},
	})
	mustStatus(t, rec, http.StatusCreated)
	ch := decodeBody[channelJSON](t, rec)
	if !strings.HasPrefix(ch.Secret, "whsec_") {
		t.Fatalf("webhook channel secret %q not shown on create", ch.Secret)
	}

	failing := newHookReceiver(t, http.StatusInternalServerError, 0, "")
	ep := env.createEndpoint(map[string]any{"partner_id": partner, "name": "conversions", "kind": "webhook",
		"url": failing.URL + "/hook", "event_types": []string{"conversion.*"}, "max_attempts": 1,
		"disable_after_failures": 4, "disable_after_hours": 0})
	if ep.DisableAfterFailures != 4 || ep.DisableAfterHours != 0 {
		t.Fatalf("create answered budget %d/%d", ep.DisableAfterFailures, ep.DisableAfterHours)
	}
	healthy := newHookReceiver(t, http.StatusOK, 0, "")
	env.createEndpoint(map[string]any{"partner_id": partner, "name": "witness", "kind": "webhook",
		"url": healthy.URL + "/hook", "event_types": []string{"conversion.*"}})
	env.startWorker()

	// One failure at a time, so each is its own completion.
	for i := 1; i <= 4; i++ {
		env.postEvent("conversion.approved", map[string]any{"n": i})
		env.waitDB(fmt.Sprintf("failure %d recorded", i), 20*time.Second,
			`SELECT count(*) = $2 FROM deliveries WHERE endpoint_id = $1 AND status = 'dead'`, ep.ID, i)
	}
	env.waitDB("endpoint disabled by its failure budget", 10*time.Second,
		`SELECT NOT enabled AND disabled_cause = 'failure_budget' AND disabled_reason LIKE 'failure budget spent%' FROM endpoints WHERE id = $1`, ep.ID)
	waitFor(t, "warnings and the disable notification", 20*time.Second, func() bool {
		return len(channel.requests()) >= 3
	})
	got := countKinds(notificationsReceived(t, channel, ch.Secret))
	if got["endpoint.warned 50"] != 1 || got["endpoint.warned 70"] != 1 || got["endpoint.disabled failure_budget"] != 1 || len(got) != 3 {
		t.Fatalf("notifications = %v, want one 50 %% warning, one 70 %% warning, one disable", got)
	}
	docs := notificationsReceived(t, channel, ch.Secret)
	if docs[0].Endpoint == nil || docs[0].Endpoint.Name != "conversions" || docs[0].Endpoint.Partner != "Budget partner" ||
		!strings.Contains(docs[0].Text, "50 %") || docs[0].Figures["failures"] != float64(2) {
		t.Fatalf("first warning = %+v", docs[0])
	}

	// The API shows the disable and the spent budget.
	rec = env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), nil)
	mustStatus(t, rec, http.StatusOK)
	view := decodeBody[endpointJSON](t, rec)
	if view.Enabled || view.DisabledCause != "failure_budget" || view.FailureBudget == nil ||
		view.FailureBudget.FailedDeliveries != 4 || !strings.HasPrefix(view.FailureBudget.Progress, "4 of 4 failures in") {
		t.Fatalf("endpoint after the budget: enabled=%v cause=%q budget=%+v", view.Enabled, view.DisabledCause, view.FailureBudget)
	}

	// While disabled: events are queued for it, not sent and not dead. The
	// witness endpoint receiving the last event proves the worker claimed
	// after the held deliveries were due.
	sentBefore := len(failing.requests())
	var held []string
	for i := range 3 {
		held = append(held, env.postEvent("conversion.approved", map[string]any{"held": i}))
	}
	last := held[len(held)-1]
	waitFor(t, "the witness endpoint to get the last event", 20*time.Second, func() bool {
		for _, r := range healthy.requests() {
			if r.WebhookID == last {
				return true
			}
		}
		return false
	})
	var pending, other int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status <> 'pending')
		FROM deliveries WHERE endpoint_id = $1 AND event_id = ANY($2::uuid[])`, ep.ID, held).Scan(&pending, &other); err != nil {
		t.Fatal(err)
	}
	if pending != 3 || other != 0 {
		t.Fatalf("deliveries of the disabled endpoint: %d pending, %d otherwise; want all 3 pending", pending, other)
	}
	if n := len(failing.requests()); n != sentBefore {
		t.Fatalf("the disabled endpoint got %d requests while disabled", n-sentBefore)
	}

	// The partner is fixed; enabling the endpoint delivers every held event.
	failing.status.Store(http.StatusOK)
	rec = env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), map[string]any{"enabled": true})
	mustStatus(t, rec, http.StatusOK)
	waitFor(t, "every held event delivered", 20*time.Second, func() bool {
		seen := map[string]bool{}
		for _, r := range failing.requests() {
			if r.Status == http.StatusOK {
				seen[r.WebhookID] = true
			}
		}
		for _, id := range held {
			if !seen[id] {
				return false
			}
		}
		return true
	})
	env.waitDB("held deliveries delivered", 10*time.Second,
		`SELECT count(*) = 3 FROM deliveries WHERE endpoint_id = $1 AND event_id = ANY($2::uuid[]) AND status = 'delivered'`, ep.ID, held)
	waitFor(t, "the re-enabled notification", 20*time.Second, func() bool { return len(channel.requests()) >= 4 })
	got = countKinds(notificationsReceived(t, channel, ch.Secret))
	if got["endpoint.enabled"] != 1 || got["endpoint.warned 50"] != 1 || got["endpoint.warned 70"] != 1 {
		t.Fatalf("notifications after re-enabling = %v", got)
	}
	env.waitDB("budget reset", 5*time.Second, `SELECT failed_deliveries = 0 AND first_failed_at IS NULL FROM endpoint_health WHERE endpoint_id = $1`, ep.ID)
}
