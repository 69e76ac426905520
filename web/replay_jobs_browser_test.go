package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestBrowserBulkReplay: an operator opens the event log at an endpoint's
// dead letters, follows "Replay these…", sees the count, starts the replay
// and watches its page count the deliveries delivered; the receiver gets
// each event again under its webhook-id.
func TestBrowserBulkReplay(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	tracker := newHookReceiver(t, http.StatusServiceUnavailable, 0, "maintenance")
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "keitaro", "kind": "webhook", "url": tracker.URL + "/in", "max_attempts": 1}).ID
	env.startWorker()
	ids := map[string]bool{}
	for i := range 3 {
		ids[env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("c-%d", i)})] = true
	}
	env.waitDB("three dead letters", 20*time.Second, `SELECT count(*) = 3 FROM deliveries WHERE status = 'dead'`)
	tracker.status.Store(http.StatusOK) // the partner fixed its side

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open(fmt.Sprintf("/events?status=dead&endpoint_id=%d", ep))
	tab.waitUntil("the dead letters in the log", sel("[data-testid=event-row]"), stepTimeout)
	tab.clickToLoad(`[data-testid=events-replay]`, `location.pathname === "/deliveries/replay" && `+sel("[data-testid=replay-count]"))
	if got := tab.attr("[data-testid=replay-count]", "data-count"); got != "3" {
		tab.fatalf("the form counts %s deliveries, want 3", got)
	}
	tab.acceptConfirms()
	tab.clickToLoad(`[data-testid=replay-start]`, `location.pathname.startsWith("/replays/")`)
	// The progress refreshes itself until every delivery is delivered.
	tab.waitUntil("the replay's page counts 3 delivered", `document.querySelector("[data-testid=replay-delivered]").textContent.trim() === "3"`, 30*time.Second)
	again := 0
	for _, r := range tracker.requests() {
		if r.Status == http.StatusOK && ids[r.WebhookID] {
			again++
		}
	}
	if again != 3 {
		t.Fatalf("the receiver got %d of the 3 events again under their webhook-id", again)
	}
	env.waitDB("audited", time.Second, `SELECT EXISTS (SELECT 1 FROM audit_log WHERE action = 'deliveries.replay' AND actor = 'user:ops@example.com')`)
}
