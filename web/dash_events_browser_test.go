package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserEventLog: an operator finds a conversion by the click id in its
// payload from the event log's search box, sees what each partner answered,
// and resends it to one partner, which receives it again with the same
// webhook-id.
func TestBrowserEventLog(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	shop := newHookReceiver(t, http.StatusOK, 0, "thanks")
	tracker := newHookReceiver(t, http.StatusServiceUnavailable, 0, "maintenance")
	acme := env.createPartner("Acme Retail")
	clickwave := env.createPartner("Clickwave")
	env.createEndpoint(map[string]any{"partner_id": acme, "name": "orders", "kind": "webhook", "url": shop.URL + "/hooks/orders",
		"headers": map[string]string{"X-Account": "acct-42"}})
	env.createEndpoint(map[string]any{"partner_id": clickwave, "name": "keitaro", "kind": "webhook", "url": tracker.URL + "/in", "max_attempts": 1})
	env.startWorker()
	for i := range 3 {
		env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("other-%d", i), "payout": 1})
	}
	id := env.postEvent("conversion.approved", map[string]any{"click_id": "9f1c2e", "payout": 2.5})
	env.waitDB("both deliveries settled", 20*time.Second,
		`SELECT count(*) FILTER (WHERE status = 'delivered') = 4 AND count(*) FILTER (WHERE status = 'dead') = 4 FROM deliveries`)

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.clickToLoad(`nav a[href="/events"]`, `location.pathname === "/events" && `+sel("[data-testid=event-row]"))
	if n := tab.count("[data-testid=event-row]"); n != 4 {
		tab.fatalf("the log shows %d events, want 4", n)
	}
	tab.screenshot("events")
	tab.typeInto(`[data-testid=events-search] input[name=q]`, "9f1c2e")
	tab.clickToLoad(`[data-testid=events-search] button[type=submit]`, `location.search.includes("q=9f1c2e")`)
	if n := tab.count("[data-testid=event-row]"); n != 1 || tab.attr("[data-testid=event-row]", "data-event-id") != id {
		tab.fatalf("the search shows %d events, want the one with the click id", n)
	}
	tab.clickToLoad(`[data-testid=event-row] a`, fmt.Sprintf(`location.pathname === "/events/%s"`, id))
	if n := tab.count("[data-testid=delivery]"); n != 2 {
		tab.fatalf("%d deliveries shown, want 2", n)
	}
	if n := tab.count(`[data-testid=attempt][data-outcome]`); n != 2 {
		tab.fatalf("%d attempts shown, want 2", n)
	}
	tab.screenshot("event")
	var del int64
	if err := env.pool.QueryRow(t.Context(), `SELECT d.id FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id WHERE d.event_id = $1 AND e.name = 'orders'`, id).Scan(&del); err != nil {
		t.Fatal(err)
	}
	form := fmt.Sprintf(`[data-testid=delivery][data-delivery-id="%d"]`, del)
	if got := tab.text(form + " [data-testid=request-text]"); !containsAll(got, "X-Account: ********", "Webhook-Signature: v1,", "Webhook-Id: "+id) {
		tab.fatalf("the request shown: %q", got)
	}
	// Both pages read well at 1024 px: contrast, nothing cut off or
	// scrolling sideways, the navigation clear of the signed-in user.
	tab.do("set the window width", chromedp.EmulateViewport(1024, 900))
	for _, path := range []string{"/events", "/events/" + id} {
		tab.open(path)
		tab.waitUntil(path, sel("[data-testid=page-header]"), stepTimeout)
		for what, js := range map[string]string{"text below 4.5:1 contrast": contrastJS, "content that does not fit": overflowJS, "the navigation and the signed-in user": overlapJS} {
			if bad := evalJS[[]string](tab, js); len(bad) > 0 {
				t.Errorf("%s at 1024 px, %s:\n  %s", path, what, strings.Join(bad, "\n  "))
			}
		}
	}
	tab.acceptConfirms()
	tab.clickToLoad(form+" [data-testid=resend]", `document.querySelector("[data-testid=flashes]").textContent.includes("queued again")`)
	env.waitDB("the resend delivered", 20*time.Second, `SELECT status = 'delivered' AND attempt_count = 2 FROM deliveries WHERE id = $1`, del)
	var mine int
	for _, r := range shop.requests() {
		if r.WebhookID == id {
			mine++
		}
	}
	if mine != 2 {
		t.Fatalf("the shop got the event %d times with its webhook-id, want 2", mine)
	}
}
