package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/worker/signing"
)

// TestBrowserPartnerPortal is the portal as a new partner meets it: the
// operator creates the partner (a webhook and a postback endpoint on
// loopback receivers) and shares a portal link; the partner, in Chromium,
// signs in through it, finds a conversion by its click id and sees its own
// tracker's answer, fixes its webhook URL after a failed test event,
// rotates its signing secret and replays its dead letters, which its
// receiver gets signed with the new secret.
func TestBrowserPartnerPortal(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	// The partner's receivers are on loopback: the partner guard opens it
	// too, as an operator opens an on-premise range for partners.
	env := newEnv(t, allowLoopback, allowPartnerLoopback, func(c *Config) { c.Portal.Title = "Acme Deliveries" })
	base := env.server()
	oldHost := newHookReceiver(t, http.StatusNotFound, 0, "no such hook")     // the URL the partner moved away from
	newHost := newHookReceiver(t, http.StatusOK, 0, `{"received":true}`)      // where it receives webhooks now
	tracker := newHookReceiver(t, http.StatusOK, 0, "OK conversion recorded") // its postback tracker

	// The operator creates the partner in the dashboard.
	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open("/partners/new")
	tab.waitUntil("the partner form", sel("#partner-name"), stepTimeout)
	tab.do("fill in the partner", chromedp.SendKeys(chromedp.CSS("#partner-name"), "Clickwave"))
	tab.click("[data-testid=partner-submit]")
	tab.waitUntil("the partner page", sel("[data-testid=share-portal-link]"), stepTimeout)
	var pid int64
	if err := env.pool.QueryRow(t.Context(), "SELECT id FROM partners WHERE name = 'Clickwave'").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Its two endpoints (the onboarding forms have their own browser test).
	hook := env.createEndpoint(map[string]any{"partner_id": pid, "name": "clickwave-webhooks", "kind": "webhook", "url": oldHost.URL + "/hooks", "max_attempts": 1})
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "clickwave-tracker", "kind": "postback", "method": "GET",
		"url": tracker.URL + "/postback?cid={click_id}&payout={payout}", "success_body_contains": "OK"})
	env.startWorker()
	conversion := env.postEvent("conversion.approved", map[string]any{"click_id": "cw-7781", "payout": 12.5})
	for i := range 3 {
		env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("cw-other-%d", i), "payout": 1})
	}
	env.waitDB("the postbacks delivered and the webhooks dead", 20*time.Second, `SELECT
		count(*) FILTER (WHERE status = 'delivered' AND endpoint_id <> $1) = 4 AND count(*) FILTER (WHERE status = 'dead' AND endpoint_id = $1) = 4
		FROM deliveries`, hook.ID)

	// The operator shares a portal link.
	tab.open(fmt.Sprintf("/partners/%d", pid))
	tab.waitUntil("the share button", sel("[data-testid=share-portal-link]"), stepTimeout)
	tab.clickToSwap("[data-testid=share-portal-link]", "[data-testid=portal-access]", sel("[data-testid=portal-link]"))
	tab.screenshot("portal-share-link")
	link := tab.text("[data-testid=portal-link] [data-testid=copybox-value]")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, base+"/portal/signin?token=") {
		tab.fatalf("shared link %q", link)
	}
	tab.clickToLoad(`[data-testid=logout-form] button`, `location.pathname === "/login"`)

	// The partner signs in through it.
	tab.open(u.RequestURI())
	tab.waitUntil("the portal", `location.pathname === "/portal/" && `+sel("[data-testid=portal-endpoints]"), stepTimeout)
	if got := tab.text("[data-testid=portal-brand]"); got != "Acme Deliveries" || tab.text("[data-testid=portal-partner]") != "Clickwave" {
		tab.fatalf("portal brand %q for %q", got, tab.text("[data-testid=portal-partner]"))
	}
	if n := tab.count("[data-testid=endpoint-row]"); n != 2 {
		tab.fatalf("%d endpoints listed, want 2", n)
	}
	tab.screenshot("portal-endpoints")

	// It finds the conversion by click id and sees its attempt. The tracker
	// listens on loopback, a private address, so what it answered is not
	// shown to the partner (TestPortalHidesPrivateAnswers: a public
	// address's answer is).
	tab.clickToLoad(`nav a[data-nav=events]`, sel("[data-testid=events-search]"))
	tab.typeInto("[data-testid=events-q]", "cw-7781")
	tab.clickToLoad("[data-testid=events-search-button]", `location.search.includes("q=cw-7781")`)
	if n := tab.count("[data-testid=event-row]"); n != 1 || tab.attr("[data-testid=event-row]", "data-event-id") != conversion {
		tab.fatalf("the search shows %d events", n)
	}
	tab.clickToLoad("[data-testid=event-row] a", fmt.Sprintf(`location.pathname === "/portal/events/%s"`, conversion))
	if body := tab.text("body"); strings.Contains(body, "OK conversion recorded") || !regexp.MustCompile(`#1 [^\n]* · 200`).MatchString(body) {
		tab.fatalf("the attempt's status is not shown, or a private address's answer is")
	}
	tab.screenshot("portal-event")

	// The webhook's test event fails on the old URL; the partner fixes it.
	tab.open(fmt.Sprintf("/portal/endpoints/%d", hook.ID))
	tab.waitUntil("the endpoint page", sel("[data-testid=test-fire-button]"), stepTimeout)
	tab.click("[data-testid=test-fire-button]")
	tab.waitUntil("the test result", sel("#portal-test-result [data-testid=test-result-view]"), stepTimeout)
	if got := tab.text("#portal-test-result"); !strings.Contains(got, "404") {
		tab.fatalf("test event on the old URL: %s", got)
	}
	tab.screenshot("portal-test-fire-failed")
	tab.clickToLoad("[data-testid=edit-endpoint]", sel("[data-testid=portal-edit-form]"))
	tab.typeInto("#portal-url", newHost.URL+"/hooks/v2")
	tab.click("[data-testid=portal-form-test]")
	tab.waitUntil("the form's test result", sel("#portal-form-test [data-testid=test-result-view]"), stepTimeout)
	if got := tab.text("#portal-form-test"); !strings.Contains(got, "200") {
		tab.fatalf("test of the new URL: %s", got)
	}
	tab.screenshot("portal-edit-tested")
	tab.click("[data-testid=portal-save]")
	tab.waitUntil("the endpoint page with the new URL", fmt.Sprintf(`location.pathname === "/portal/endpoints/%d" && `, hook.ID)+
		sel("[data-testid=endpoint-url]")+`?.textContent === `+jsString(newHost.URL+"/hooks/v2"), stepTimeout)

	// It rotates its signing secret, without overlap.
	tab.acceptConfirms()
	evalJS[chromedp.Void](tab, sel("[data-testid=rotate-overlap]")+`.value = "0"`)
	tab.clickToSwap("[data-testid=rotate-button]", "#portal-secrets", sel("[data-testid=new-secret]"))
	secret := tab.text("[data-testid=new-secret] [data-testid=copybox-value]")
	if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(tab.text("[data-testid=verify-snippet]"), secret) {
		tab.fatalf("new secret %q", secret)
	}
	tab.screenshot("portal-rotated")

	// It replays its dead letters.
	tab.clickToSwap("[data-testid=replay-cluster]", "#portal-dead", sel("[data-testid=replayed]"))
	if got := tab.attr("[data-testid=replayed]", "data-count"); got != "4" {
		tab.fatalf("replayed %s, want 4", got)
	}
	tab.screenshot("portal-replayed")
	env.waitDB("the replayed dead letters delivered", 20*time.Second,
		`SELECT count(*) = 4 FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'`, hook.ID)

	// The receiver got every one at the new URL, signed with the new secret.
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	verified := map[string]bool{}
	for _, r := range newHost.requests() {
		if r.Path != "/hooks/v2" || r.Header.Get("webhook-id") == "" || strings.Contains(string(r.Body), `"test":true`) {
			continue
		}
		if err := signing.Verify(key, r.Header, r.Body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("delivery %s does not verify with the new secret: %v", r.WebhookID, err)
		}
		verified[r.WebhookID] = true
	}
	if len(verified) != 4 || !verified[conversion] {
		t.Fatalf("%d replayed deliveries verified with the new secret, want 4 (the conversion among them: %v)", len(verified), verified[conversion])
	}

	// Everything it did is in the operator's audit log as the partner's.
	var n int
	if err := env.pool.QueryRow(t.Context(), `SELECT count(DISTINCT action) FROM audit_log WHERE actor = 'partner Clickwave (portal)'
		AND action IN ('endpoint.test_fire', 'endpoint.update', 'endpoint.rotate_secret', 'dead_letters.replay')`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("the partner's actions audited: %d kinds (%v)", n, err)
	}

	// The operator lets it manage its endpoints: it adds a postback
	// endpoint, watching the template's live preview, gets its secret once,
	// then disables it.
	mustStatus(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/partners/%d", pid), map[string]any{"portal_manage_endpoints": true}), http.StatusOK)
	tab.open("/portal/")
	tab.waitUntil("the add button", sel("[data-testid=new-endpoint]"), stepTimeout)
	tab.clickToLoad("[data-testid=new-endpoint]", sel("[data-testid=portal-new-form]"))
	tab.clickToLoad("[data-testid=kind-postback]", `location.search.includes("kind=postback") && `+sel("#portal-new-url"))
	tab.typeInto("#portal-new-name", "clickwave-tracker-v2")
	tab.typeInto("#portal-new-url", tracker.URL+"/v2?cid={click_id}&amount={payout}")
	tab.waitUntil("the live preview", sel("#postback-preview")+`?.textContent.includes("amount=")`, stepTimeout)
	tab.typeInto("#portal-new-event-types", "conversion.approved")
	tab.click("[data-testid=portal-create]")
	tab.waitUntil("the new endpoint's secret", sel("[data-testid=portal-created]"), stepTimeout)
	if created := tab.text("[data-testid=portal-created] [data-testid=copybox-value]"); !strings.HasPrefix(created, "whsec_") {
		tab.fatalf("created secret %q", created)
	}
	tab.screenshot("portal-endpoint-created")
	tab.clickToLoad("[data-testid=created-endpoint-link]", sel("[data-testid=portal-manage]"))
	tab.acceptConfirms()
	tab.clickToSwap("[data-testid=endpoint-disable]", "#portal-manage", sel("[data-testid=endpoint-enable]"))
	tab.screenshot("portal-endpoint-disabled")
	var enabled bool
	var owner int64
	if err := env.pool.QueryRow(t.Context(), "SELECT enabled, partner_id FROM endpoints WHERE name = 'clickwave-tracker-v2'").Scan(&enabled, &owner); err != nil || enabled || owner != pid {
		t.Fatalf("the portal's endpoint: enabled %v, partner %d (%v)", enabled, owner, err)
	}
}
