package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestBrowserFailureBudget: an endpoint whose partner keeps failing is
// disabled by its failure budget; the operator sees why on its page in
// Chromium, events posted meanwhile wait in the queue, and after the
// partner's fix "Enable again" delivers every one of them.
func TestBrowserFailureBudget(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	partner := newHookReceiver(t, http.StatusInternalServerError, 0, "down")
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "conversions", "kind": "webhook", "url": partner.URL + "/in",
		"max_attempts": 1, "disable_after_failures": 2, "disable_after_hours": 0}).ID
	env.startWorker()
	env.postEvent("conversion.approved", map[string]any{"click_id": "a"})
	env.postEvent("conversion.approved", map[string]any{"click_id": "b"})
	env.waitDB("disabled by its budget", 20*time.Second, `SELECT NOT enabled AND disabled_cause = 'failure_budget' FROM endpoints WHERE id = $1`, ep)
	held := map[string]bool{}
	for _, c := range []string{"c", "d", "e"} {
		held[env.postEvent("conversion.approved", map[string]any{"click_id": c})] = true
	}
	env.waitDB("three held, none dead", time.Second, `SELECT count(*) FILTER (WHERE status = 'pending') = 3 AND count(*) FILTER (WHERE status = 'dead') = 2 FROM deliveries`)
	partner.status.Store(http.StatusOK)

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open(fmt.Sprintf("/endpoints/%d", ep))
	tab.waitUntil("the endpoint page", sel("[data-testid=endpoint-enable]"), stepTimeout)
	if got := tab.text("[data-testid=failure-budget]"); !containsAll(got, "2 of 2 failures") {
		tab.fatalf("the budget line reads %q", got)
	}
	tab.acceptConfirms()
	tab.click("[data-testid=endpoint-enable]") // an htmx swap of the health panel
	tab.waitUntil("the endpoint enabled", `!document.querySelector("[data-testid=endpoint-enable]")`, stepTimeout)
	env.waitDB("the held deliveries delivered", 20*time.Second, `SELECT count(*) = 3 FROM deliveries WHERE status = 'delivered'`)
	got := 0
	for _, r := range partner.requests() {
		if r.Status == http.StatusOK && held[r.WebhookID] {
			got++
		}
	}
	if got != 3 {
		t.Fatalf("the partner got %d of the 3 held events", got)
	}
}
