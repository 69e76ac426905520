package web

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// choose selects an option the way a person does: the page sees a change.
func choose(tab *chromeTab, css, value string) {
	tab.t.Helper()
	evalJS[chromedp.Void](tab, sel(css)+".value = "+jsString(value)+"; "+sel(css)+`.dispatchEvent(new Event("change", {bubbles: true}))`)
}

// TestBrowserFilterBuilder: on the edit form, filling a builder row
// refreshes the preview of recent events through htmx, and saving stores
// the filter the rows say.
func TestBrowserFilterBuilder(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t)
	base := env.server()
	env.createDashUser("admin@example.com", "admin")
	pid := env.createPartner("Clickwave")
	e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "approved-br", "kind": "webhook",
		"url": "https://hooks.clickwave.invalid/in", "event_types": []string{"conversion.*"}})
	for i, c := range []string{"BR", "PT", "BR", "ES", "BR", "PT"} {
		status := "approved"
		if i == 2 {
			status = "rejected"
		}
		mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved",
			"payload": map[string]any{"click_id": fmt.Sprintf("c-%d", i), "status": status, "payout": 2.5 * float64(i), "country": c}}), http.StatusAccepted)
	}
	tab := newChromeTab(t, base)
	tab.login("admin@example.com")
	tab.open(fmt.Sprintf("/endpoints/%d/edit", e.ID))
	tab.waitUntil("the filter builder", sel("#filter-field-0")+" && "+sel("[data-testid=filter-preview-summary]"), stepTimeout)
	if got := tab.text("[data-testid=filter-preview-summary]"); got != "No filter: all 6 recent events of these types are delivered." {
		tab.fatalf("summary without a filter: %q", got)
	}

	tab.typeInto("#filter-field-0", "status")
	tab.typeInto("#filter-value-0", "approved")
	tab.waitUntil("the preview of status = approved", sel("[data-testid=filter-preview-summary]")+`?.textContent.includes("5 of the last 6")`, stepTimeout)
	tab.typeInto("#filter-field-1", "country")
	choose(tab, "#filter-op-1", "in")
	tab.typeInto("#filter-value-1", "BR, PT")
	tab.waitUntil("the preview with the country", sel("[data-testid=filter-preview-summary]")+`?.textContent.includes("4 of the last 6")`, stepTimeout)
	tab.typeInto("#filter-field-2", "payout")
	choose(tab, "#filter-op-2", "gte")
	tab.typeInto("#filter-value-2", "5")
	tab.waitUntil("the preview with the payout", sel("[data-testid=filter-preview-summary]")+`?.textContent.includes("2 of the last 6")`, stepTimeout)
	tab.screenshot("filter-builder")
	// The builder alone, for the README.
	png, err := chromedp.Run(tab.ctx, chromedp.Screenshot(chromedp.CSS("[data-testid=filter-builder]")))
	if err != nil {
		tab.fatalf("screenshot of the builder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(tab.dir, "filter-builder-section.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}

	tab.click("[data-testid=endpoint-submit]")
	tab.waitUntil("the endpoint page after saving", fmt.Sprintf("location.pathname === %q && !%s", fmt.Sprintf("/endpoints/%d", e.ID), sel("#filter-field-0")), stepTimeout)
	if got, want := storedFilter(t, env, e.ID), `{"country":{"$in":["BR","PT"]},"payout":{"$gte":5},"status":"approved"}`; got != want {
		t.Fatalf("stored filter %s, want %s", got, want)
	}
}
