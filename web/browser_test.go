package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/worker/signing"
)

// TestBrowserDashboard: real traffic through the worker (on top of 23 hours
// of stored latency history) feeds the overview and the endpoints table:
// three sparklines per row, the right breaker badge per endpoint, and the
// table refreshing itself, both on a filter change and on its 10 s poll,
// without a page load.
func TestBrowserDashboard(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	ok := newHookReceiver(t, http.StatusOK, 0, "ok")
	slow := newHookReceiver(t, http.StatusOK, 40*time.Millisecond, "ok")
	tracker := newHookReceiver(t, http.StatusOK, 0, "OK")
	down := newHookReceiver(t, http.StatusServiceUnavailable, 0, "maintenance")

	acme := env.createPartner("Acme Retail")
	clickwave := env.createPartner("Clickwave")
	orders := env.createEndpoint(map[string]any{"partner_id": acme, "name": "orders", "kind": "webhook", "url": ok.URL + "/hooks/orders"}).ID
	invoices := env.createEndpoint(map[string]any{"partner_id": acme, "name": "invoices", "kind": "webhook", "url": slow.URL + "/hooks/invoices"}).ID
	keitaro := env.createEndpoint(map[string]any{"partner_id": clickwave, "name": "keitaro", "kind": "postback", "method": "GET",
		"url": tracker.URL + "/postback?subid={click_id}&payout={payout}", "success_body_contains": "OK"}).ID
	legacy := env.createEndpoint(map[string]any{"partner_id": clickwave, "name": "legacy-crm", "kind": "webhook", "url": down.URL + "/crm",
		"max_attempts": 1, "failure_threshold": 3}).ID
	backfillLatency(t, env.pool, orders, 30*time.Millisecond, 0.002, 1)
	backfillLatency(t, env.pool, invoices, 180*time.Millisecond, 0.01, 2)
	backfillLatency(t, env.pool, keitaro, 60*time.Millisecond, 0.02, 3)
	backfillLatency(t, env.pool, legacy, 350*time.Millisecond, 0.1, 4)

	w := env.startWorker()
	const events = 8
	for i := range events {
		env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("click-%d", i), "payout": 2.5})
	}
	env.waitDB("deliveries to the healthy endpoints and the legacy breaker opening", 20*time.Second, `
		SELECT (SELECT count(*) FROM deliveries WHERE endpoint_id = ANY($1) AND status = 'delivered') = $2
		   AND (SELECT state FROM endpoint_health WHERE endpoint_id = $3) = 'open'`,
		[]int64{orders, invoices, keitaro}, 3*events, legacy)
	for _, r := range tracker.requests() {
		if r.Path != "/postback" || !strings.HasPrefix(r.Query, "subid=click-") || !strings.Contains(r.Query, "payout=2.5") {
			t.Fatalf("the tracker got a postback %s?%s", r.Path, r.Query)
		}
	}
	mustStatus(t, env.do(http.MethodPost, fmt.Sprintf("/api/v1/endpoints/%d/pause", invoices), nil), http.StatusOK)
	// The worker records an attempt's latency just after committing its
	// result, so the last ones may need another flush.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := w.RefreshNow(context.Background()); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM endpoint_health
			WHERE recent_sample_count > 0 AND sample_count > 0
			  AND endpoint_id IN (SELECT endpoint_id FROM endpoint_sparklines)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cached latency for %d of 4 endpoints after refreshing", n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.open("/login")
	tab.screenshot("login")
	tab.login("ops@example.com")

	t.Run("overview", func(t *testing.T) {
		tab := tab.with(t)
		tab.waitUntil("the overview tiles", `document.querySelectorAll("[data-testid=tile]").length === 8`, stepTimeout)
		if n := tab.count("[data-testid=empty-state]"); n != 0 {
			tab.fatalf("the overview says nothing was delivered yet (%d empty states)", n)
		}
		tab.screenshot("overview")
	})

	row := func(id int64) string { return fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"]`, id) }
	t.Run("endpoints table", func(t *testing.T) {
		tab := tab.with(t)
		tab.open("/endpoints")
		tab.waitUntil("four endpoint rows", `document.querySelectorAll("[data-testid=endpoint-row]").length === 4`, stepTimeout)
		want := map[int64]string{orders: "closed", invoices: "paused", keitaro: "closed", legacy: "open"}
		for id, state := range want {
			r := row(id)
			if n := tab.count(r + " [data-testid=sparkline]"); n != 3 {
				tab.fatalf("endpoint %d: %d sparklines, want 3 (P50, P95, P99)", id, n)
			}
			// Each sparkline is named by its <title>, and draws the stored
			// history as at least one path segment.
			titles := evalJS[[]string](tab, `[...document.querySelectorAll(`+jsString(r+" [data-testid=sparkline]")+`)].map(s => s.querySelector("title")?.textContent ?? "")`)
			for i, title := range titles {
				if !strings.Contains(title, "ms") && !strings.Contains(title, " s") {
					tab.fatalf("endpoint %d sparkline %d has title %q", id, i, title)
				}
			}
			if n := tab.count(r + ` [data-testid=sparkline] path[data-series]`); n != 3 {
				tab.fatalf("endpoint %d: %d sparkline paths, want 3", id, n)
			}
			if got := tab.attr(r+" [data-testid=breaker-badge]", "data-state"); got != state {
				tab.fatalf("endpoint %d: breaker badge %q, want %q", id, got, state)
			}
		}
		if got := tab.text(row(legacy) + " [data-testid=success-rate]"); !strings.Contains(got, "failing in a row") {
			tab.fatalf("legacy-crm success column: %q", got)
		}
		tab.screenshot("endpoints")
	})

	t.Run("filter and live refresh without a page load", func(t *testing.T) {
		tab := tab.with(t)
		// Marks that a page load would wipe out: the window's, and the
		// table's (a swap replaces the element).
		evalJS[chromedp.Void](tab, `window.__hooklineSamePage = true; document.getElementById("endpoints-table").__hooklineOld = true`)
		evalJS[chromedp.Void](tab, `(() => { const s = document.querySelector("select[name=show]"); s.value = "open"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`)
		tab.waitUntil("the table filtered to open or paused breakers", `window.__hooklineSamePage && !document.getElementById("endpoints-table").__hooklineOld
			&& document.querySelectorAll("[data-testid=endpoint-row]").length === 2 && location.search.includes("show=open")`, stepTimeout)
		for _, id := range []int64{legacy, invoices} {
			if tab.count(row(id)) != 1 {
				tab.fatalf("the open filter lacks endpoint %d", id)
			}
		}
		tab.screenshot("endpoints-filtered")

		// The table polls every 10 s with its filter: resuming the paused
		// endpoint makes it leave the "open or paused" list by itself.
		evalJS[chromedp.Void](tab, `document.getElementById("endpoints-table").__hooklineOld = true`)
		mustStatus(t, env.do(http.MethodPost, fmt.Sprintf("/api/v1/endpoints/%d/resume", invoices), nil), http.StatusOK)
		tab.waitUntil("the 10 s refresh to drop the resumed endpoint", `window.__hooklineSamePage && !document.getElementById("endpoints-table").__hooklineOld
			&& document.querySelectorAll("[data-testid=endpoint-row]").length === 1 && document.querySelector(`+jsString(row(legacy))+`)`, 16*time.Second)
		tab.screenshot("endpoints-live")
	})

	t.Run("endpoint detail", func(t *testing.T) {
		tab := tab.with(t)
		tab.clickToLoad(row(legacy)+" a", fmt.Sprintf(`location.pathname === "/endpoints/%d" && %s`, legacy, sel("[data-testid=endpoint-health]")))
		if got := tab.attr("[data-testid=endpoint-health] [data-testid=breaker-badge]", "data-state"); got != "open" {
			tab.fatalf("detail breaker badge %q", got)
		}
		if tab.count("[data-testid=attempt-row]") == 0 || tab.count("[data-testid=breaker-force-close]") != 1 {
			tab.fatalf("the open endpoint's page lacks its attempts or the force-close control")
		}
		tab.screenshot("endpoint-detail-open")
		tab.open(fmt.Sprintf("/endpoints/%d", orders))
		tab.waitUntil("the orders endpoint page", sel("[data-testid=endpoint-health]"), stepTimeout)
		if n := tab.count("[data-testid=attempt-row]"); n != events {
			tab.fatalf("orders shows %d attempts, want %d", n, events)
		}
		tab.screenshot("endpoint-detail")
	})
}

// TestBrowserReplayCluster: a partner rotates its credentials, deliveries
// die with 401; the operator replays the cluster from the dead-letters page
// once the partner is fixed, and watches them being delivered.
func TestBrowserReplayCluster(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusUnauthorized, 0, `{"error":"invalid token"}`)
	pid := env.createPartner("Acme Retail")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "crm-sync", "kind": "webhook", "url": rcv.URL + "/in", "max_attempts": 1}).ID
	env.startWorker()
	const n = 4
	ids := make([]string, n)
	for i := range ids {
		ids[i] = env.postEvent("order.created", map[string]any{"order_id": i, "payout": 10})
	}
	env.waitDB("the deliveries to die with 401", 15*time.Second,
		`SELECT count(*) = $2 FROM deliveries WHERE endpoint_id = $1 AND status = 'dead' AND last_status_code = 401`, ep, n)

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open("/dead-letters")
	cluster := `[data-testid=cluster-row][data-pattern=credentials]`
	tab.waitUntil("the credentials cluster", sel(cluster), stepTimeout)
	if got := tab.text(cluster + " [data-testid=cluster-count]"); got != fmt.Sprint(n) {
		tab.fatalf("cluster count %q, want %d", got, n)
	}
	tab.screenshot("dead-letters")
	tab.click(cluster + " [data-testid=cluster-expand] summary")
	tab.waitUntil("the cluster's deliveries", fmt.Sprintf(`document.querySelectorAll(%s).length === %d`, jsString(cluster+" [data-testid=dead-delivery]"), n), stepTimeout)
	tab.screenshot("dead-letters-expanded")

	rcv.status.Store(http.StatusOK) // the partner fixed its side
	tab.acceptConfirms()
	tab.click(cluster + " [data-testid=replay-cluster]")
	tab.waitUntil("the replay to be accepted", fmt.Sprintf(`%s?.textContent.trim() === "%d re-queued"`, sel("[data-testid=replay-requeued]"), n), stepTimeout)
	// The re-queued dead letters leave the cluster: its row's count follows.
	tab.waitUntil("the cluster's count to drop to 0", fmt.Sprintf(`%s?.textContent.trim() === "0"`, sel(cluster+" [data-testid=cluster-count]")), stepTimeout)
	tab.screenshot("dead-letters-replaying")
	tab.waitUntil("the progress to show every delivery delivered", fmt.Sprintf(`%s?.textContent.trim() === "%d delivered" && %s?.dataset.waiting === "0"`,
		sel("[data-testid=replay-delivered]"), n, sel("[data-testid=replay-progress]")), 15*time.Second)
	tab.screenshot("dead-letters-replayed")

	var delivered, replayed int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE replay_count = 1)
		FROM deliveries WHERE endpoint_id = $1`, ep).Scan(&delivered, &replayed); err != nil {
		t.Fatal(err)
	}
	if delivered != n || replayed != n {
		t.Fatalf("after the replay: %d delivered, %d replayed once, want %d", delivered, replayed, n)
	}
	// The receiver saw every event twice under the same webhook-id: the 401
	// and the replay it accepted.
	seen := map[string][]int{}
	for _, r := range rcv.requests() {
		seen[r.WebhookID] = append(seen[r.WebhookID], r.Status)
	}
	for _, id := range ids {
		if got := seen[id]; len(got) != 2 || got[0] != http.StatusUnauthorized || got[1] != http.StatusOK {
			t.Errorf("event %s reached the receiver as %v, want [401 200]", id, got)
		}
	}
	if len(seen) != n {
		t.Errorf("the receiver saw %d webhook ids, want %d", len(seen), n)
	}
	env.waitDB("the replay in the audit log", time.Second, `SELECT count(*) = 1 FROM audit_log WHERE action = 'dead_letters.replay'`)
}

// TestBrowserReplayDelivery: one delivery replayed from an expanded
// cluster shows its progress until it is delivered, like a cluster replay,
// and the cluster's count follows; htmx finds every target it swaps.
func TestBrowserReplayDelivery(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusUnauthorized, 0, `{"error":"invalid token"}`)
	pid := env.createPartner("Acme Retail")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "crm-sync", "kind": "webhook", "url": rcv.URL + "/in", "max_attempts": 1}).ID
	env.startWorker()
	const n = 3
	for i := range n {
		env.postEvent("order.created", map[string]any{"order_id": i})
	}
	env.waitDB("the deliveries to die with 401", 15*time.Second,
		`SELECT count(*) = $2 FROM deliveries WHERE endpoint_id = $1 AND status = 'dead' AND last_status_code = 401`, ep, n)

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open("/dead-letters")
	cluster := `[data-testid=cluster-row][data-pattern=credentials]`
	tab.waitUntil("the credentials cluster", sel(cluster), stepTimeout)
	evalJS[chromedp.Void](tab, `window.__hooklineTargetErrors = 0; document.addEventListener("htmx:targetError", () => window.__hooklineTargetErrors++)`)
	tab.click(cluster + " [data-testid=cluster-expand] summary")
	first := cluster + " [data-testid=dead-delivery]"
	tab.waitUntil("the cluster's deliveries", fmt.Sprintf(`document.querySelectorAll(%s).length === %d`, jsString(first), n), stepTimeout)

	rcv.status.Store(http.StatusOK) // the partner fixed its side
	tab.click(first + " [data-testid=replay-delivery]")
	progress := first + " [data-testid=replay-progress]"
	tab.waitUntil("the delivery's replay to be accepted", sel(progress+" [data-testid=replay-requeued]")+`?.textContent.trim() === "1 re-queued"`, stepTimeout)
	tab.waitUntil("the cluster's count to drop by one", fmt.Sprintf(`%s?.textContent.trim() === "%d"`, sel(cluster+" [data-testid=cluster-count]"), n-1), stepTimeout)
	tab.waitUntil("the progress to show the delivery delivered", fmt.Sprintf(`%s?.textContent.trim() === "1 delivered" && %s?.dataset.waiting === "0"`,
		sel(progress+" [data-testid=replay-delivered]"), sel(progress)), 15*time.Second)
	tab.screenshot("dead-letters-delivery-replayed")

	if got := evalJS[int](tab, "window.__hooklineTargetErrors"); got != 0 {
		tab.fatalf("htmx could not find a swap target %d times", got)
	}
	if errs := tab.consoleErrors("targetError"); len(errs) > 0 {
		tab.fatalf("the browser logged: %v", errs)
	}
	var delivered, dead int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'dead')
		FROM deliveries WHERE endpoint_id = $1`, ep).Scan(&delivered, &dead); err != nil {
		t.Fatal(err)
	}
	if delivered != 1 || dead != n-1 {
		t.Fatalf("after replaying one delivery: %d delivered, %d dead; want 1 and %d", delivered, dead, n-1)
	}
}

// TestBrowserRotateSecret: rotating a signing secret shows the new secret
// once, keeps the old one signing for the chosen overlap, and never shows the
// secret again.
func TestBrowserRotateSecret(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusOK, 0, "ok")
	pid := env.createPartner("Acme Retail")
	created := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": rcv.URL + "/in"})
	ep := created.ID
	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	path := fmt.Sprintf("/endpoints/%d", ep)
	tab.open(path)
	tab.waitUntil("the secrets panel", `document.querySelectorAll("[data-testid=secret-row]").length === 1`, stepTimeout)
	tab.screenshot("endpoint-secrets")

	tab.do("choose a one-hour overlap", chromedp.SetValue(chromedp.CSS("[data-testid=rotate-overlap]"), "3600"))
	tab.acceptConfirms()
	tab.clickToSwap("[data-testid=rotate-button]", "[data-testid=secrets]", sel("[data-testid=new-secret] #new-secret-value"))
	secret := tab.text("#new-secret-value")
	if !strings.HasPrefix(secret, "whsec_") || secret == created.Secret {
		tab.fatalf("new secret %q", secret)
	}
	if n := tab.count("[data-testid=secret-row]"); n != 2 {
		tab.fatalf("%d secrets listed after the rotation, want 2 during the overlap", n)
	}
	tab.screenshot("endpoint-secret-rotated")
	var rows int
	var overlap float64
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*), coalesce(extract(epoch FROM max(expires_at) - now()), 0)
		FROM endpoint_secrets WHERE endpoint_id = $1`, ep).Scan(&rows, &overlap); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || overlap < 3500 || overlap > 3600 {
		t.Fatalf("stored: %d secrets, the old one expiring in %.0f s; want 2 and about 3600 s", rows, overlap)
	}

	// A test event is signed with both secrets during the overlap.
	tab.click("[data-testid=test-fire-button]")
	tab.waitUntil("the test result", sel("[data-testid=test-result-view]"), stepTimeout)
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests", len(got))
	}
	for name, s := range map[string]string{"new": secret, "old": created.Secret} {
		key, err := signing.ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := signing.Verify(key, got[0].Header, got[0].Body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("the test event does not verify with the %s secret: %v", name, err)
		}
	}

	tab.do("reload", chromedp.Reload())
	tab.waitUntil("the reloaded page", `document.querySelectorAll("[data-testid=secret-row]").length === 2`, stepTimeout)
	if tab.count("[data-testid=new-secret]") != 0 || strings.Contains(evalJS[string](tab, "document.documentElement.outerHTML"), "whsec_") {
		tab.fatalf("the secret is shown again after a reload")
	}
	tab.screenshot("endpoint-secret-reloaded")
}

// TestBrowserViewerAndCSRF: a viewer sees dead letters and endpoints without
// any control, and the server refuses its state changes whatever the page
// does; an operator's state changes need the page's CSRF token.
func TestBrowserViewerAndCSRF(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme Retail")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "crm", "kind": "webhook", "url": "https://crm.example/in"}).ID
	env.seedDead(ep, "http_status", 401, "", times(time.Now().Add(-time.Hour), 3, time.Minute)...)
	env.createDashUser("viewer@example.com", "viewer")
	env.createDashUser("ops@example.com", "operator")
	deadNow := func() int { return countWhere(t, env, "deliveries", "status = 'dead'") }

	tab := newChromeTab(t, base)
	tab.login("viewer@example.com")
	tab.open("/dead-letters")
	tab.waitUntil("the cluster", sel("[data-testid=cluster-row]"), stepTimeout)
	key := tab.attr("[data-testid=cluster-row]", "data-cluster")
	for _, control := range []string{"replay-cluster", "replay-endpoint", "replay-since"} {
		if n := tab.count("[data-testid=" + control + "]"); n != 0 {
			tab.fatalf("a viewer sees %s", control)
		}
	}
	tab.screenshot("viewer-dead-letters")

	t.Run("viewer state changes are refused", func(t *testing.T) {
		tab := tab.with(t)
		if got := tab.fetchStatus("POST", "/dead-letters/replay", nil, map[string]string{"cluster": "x"}); got != http.StatusForbidden {
			t.Errorf("viewer POST without a token: %d, want 403", got)
		}
		token := tab.csrfToken()
		if got := tab.fetchStatus("POST", "/dead-letters/replay", map[string]string{"X-CSRF-Token": token, "HX-Request": "true"}, map[string]string{"cluster": key}); got != http.StatusForbidden {
			t.Errorf("viewer POST with the token: %d, want 403 (role)", got)
		}
		if n := deadNow(); n != 3 {
			t.Fatalf("%d dead letters left, want 3", n)
		}
		// What a viewer sees when htmx gets a 403 anyway.
		evalJS[chromedp.Void](tab, `htmx.ajax("POST", "/dead-letters/replay", {target: "#flashes", swap: "none", values: {cluster: `+jsString(key)+`}})`)
		tab.waitUntil("the refusal to be shown", `document.querySelector("[data-testid=flash][data-client-flash]")?.textContent.includes("role")`, stepTimeout)
		tab.screenshot("viewer-refused")
	})

	t.Run("viewer endpoint page has no controls", func(t *testing.T) {
		tab := tab.with(t)
		tab.open(fmt.Sprintf("/endpoints/%d", ep))
		tab.waitUntil("the endpoint page", sel("[data-testid=endpoint-health]"), stepTimeout)
		for _, control := range []string{"breaker-controls", "breaker-pause", "breaker-force-close", "rotate-button", "test-fire", "edit-endpoint"} {
			if n := tab.count("[data-testid=" + control + "]"); n != 0 {
				tab.fatalf("a viewer sees %s", control)
			}
		}
		tab.screenshot("viewer-endpoint")
		tab.open("/settings/api-keys")
		tab.waitUntil("the error page", sel("[data-testid=error-page]"), stepTimeout)
		if got := tab.attr("[data-testid=error-page]", "data-status"); got != "403" {
			tab.fatalf("a viewer opening the API keys gets %q, want 403", got)
		}
		tab.screenshot("viewer-forbidden")
	})

	t.Run("operator needs the token", func(t *testing.T) {
		tab := tab.with(t)
		tab.clickToLoad("[data-testid=logout-form] button", `location.pathname === "/login"`)
		tab.login("ops@example.com")
		tab.open("/dead-letters")
		tab.waitUntil("the cluster", sel("[data-testid=replay-cluster]"), stepTimeout)
		if got := tab.fetchStatus("POST", "/dead-letters/replay", nil, map[string]string{"cluster": key}); got != http.StatusForbidden {
			t.Errorf("operator POST without a token: %d, want 403", got)
		}
		if got := tab.fetchStatus("POST", "/dead-letters/replay", map[string]string{"X-CSRF-Token": "forged"}, map[string]string{"cluster": key}); got != http.StatusForbidden {
			t.Errorf("operator POST with a forged token: %d, want 403", got)
		}
		if n := deadNow(); n != 3 {
			t.Fatalf("a refused request replayed something: %d dead letters left", n)
		}
		token := tab.csrfToken()
		if got := tab.fetchStatus("POST", "/dead-letters/replay", map[string]string{"X-CSRF-Token": token, "HX-Request": "true"}, map[string]string{"cluster": "x"}); got != http.StatusUnprocessableEntity {
			t.Errorf("operator POST with the token and a bad cluster: %d, want 422", got)
		}
		// The form field works as well as the header.
		if got := tab.fetchStatus("POST", "/dead-letters/replay", map[string]string{"HX-Request": "true"}, map[string]string{"cluster": key, "csrf_token": token}); got != http.StatusOK {
			t.Errorf("operator POST with the form's token: %d, want 200", got)
		}
		if n := deadNow(); n != 0 {
			t.Errorf("%d dead letters left after the accepted replay", n)
		}
	})
}

// TestBrowserOnboarding: onboarding a partner with a Keitaro postback from
// the forms (preset, live preview, field errors, test fire, secret shown
// once), then creating and revoking an API key.
func TestBrowserOnboarding(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusOK, 0, "OK")
	env.createDashUser("admin@example.com", "admin")
	tab := newChromeTab(t, base)
	tab.login("admin@example.com")

	// Step 1: the partner.
	tab.open("/partners/new")
	tab.waitUntil("the partner form", sel("#partner-name"), stepTimeout)
	tab.clickToSwap("[data-testid=partner-submit]", "[data-testid=partner-form]", sel(`[data-field=name] .field-error`))
	tab.screenshot("partner-new-invalid")
	tab.do("fill in the partner",
		chromedp.SendKeys(chromedp.CSS("#partner-name"), "Clickwave"),
		chromedp.SendKeys(chromedp.CSS("#partner-contact"), "ops@clickwave.example"),
	)
	tab.click("[data-testid=partner-submit]")
	tab.waitUntil("the partner page", `location.pathname.startsWith("/partners/") && `+sel("[data-testid=add-postback]"), stepTimeout)
	var partnerID int64
	if err := env.pool.QueryRow(context.Background(), "SELECT id FROM partners WHERE name = 'Clickwave'").Scan(&partnerID); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/partners/%d", partnerID); evalJS[string](tab, "location.pathname") != want {
		tab.fatalf("after creating the partner the browser is not at %s", want)
	}
	tab.screenshot("partner-created")

	// Step 2: the postback endpoint.
	tab.clickToLoad("[data-testid=add-postback]", sel("[data-testid=presets]"))
	tab.screenshot("onboarding-postback-form")
	tab.clickToLoad(`[data-testid=presets] a[data-preset=keitaro]`, sel("[data-testid=preset-help]"))
	tab.waitUntil("the preview of the preset", sel("[data-testid=preview-url]"), stepTimeout)
	preset := evalJS[string](tab, sel("#endpoint-url")+".value")
	if !strings.Contains(preset, "YOUR-DOMAIN.example") || !strings.Contains(preset, "{click_id}") {
		tab.fatalf("keitaro template %q", preset)
	}
	tab.screenshot("onboarding-keitaro-form")

	// What the operator pastes from the tracker: its domain and postback key.
	mine := strings.Replace(preset, "https://YOUR-DOMAIN.example/POSTBACK-KEY", rcv.URL+"/k7Qx2", 1)
	if mine == preset {
		t.Fatalf("the preset template %q does not start with https://YOUR-DOMAIN.example/POSTBACK-KEY", preset)
	}
	tab.typeInto("#endpoint-url", mine+"&x={clik_id}")
	tab.waitUntil("the misspelt macro marked in the preview", sel(`[data-testid=preview-url] mark.macro-unknown[data-macro="clik_id"]`), stepTimeout)
	tab.screenshot("onboarding-unknown-macro")

	// The preset's placeholder host is refused, next to the URL field,
	// and nothing is saved.
	form := "[data-testid=endpoint-form]"
	tab.typeInto("#endpoint-url", preset)
	tab.clickToSwap("[data-testid=endpoint-submit]", form, sel(`[data-field=url] .field-error`))
	if n := countWhere(t, env, "endpoints", "true"); n != 0 {
		t.Fatalf("an invalid form saved %d endpoints", n)
	}
	if got := tab.text(`[data-field=url] .field-error`); got == "" {
		tab.fatalf("empty URL error")
	}
	tab.screenshot("onboarding-invalid-url")
	tab.typeInto("#endpoint-url", "ftp://tracker.example/postback?subid={click_id}")
	tab.clickToSwap("[data-testid=endpoint-submit]", form, sel(`[data-field=url] .field-error`)+`?.textContent.includes("ftp")`)
	if n := countWhere(t, env, "endpoints", "true"); n != 0 {
		t.Fatalf("an ftp URL saved %d endpoints", n)
	}

	// Fixed: the test event reaches the loopback tracker.
	tab.typeInto("#endpoint-url", mine)
	tab.waitUntil("the preview of the fixed URL", sel("[data-testid=preview-url]")+`?.textContent.includes("/k7Qx2/postback")`, stepTimeout)
	tab.click("[data-testid=form-test-fire]")
	tab.waitUntil("the test result", sel("#form-test-result [data-testid=test-result-view]"), stepTimeout)
	if res := tab.text("#form-test-result"); !strings.Contains(res, "200") || tab.text("#form-test-result [data-testid=test-latency]") == "" {
		tab.fatalf("test fire result: %s", res)
	}
	if got := rcv.requests(); len(got) != 1 || got[0].Path != "/k7Qx2/postback" || !strings.Contains(got[0].Query, "subid=") {
		t.Fatalf("the tracker got %d requests (%+v)", len(got), got)
	}
	tab.screenshot("onboarding-test-fire")

	tab.click("[data-testid=endpoint-submit]")
	tab.waitUntil("the created page", sel("[data-testid=endpoint-created] #created-secret"), stepTimeout)
	secret := tab.text("#created-secret")
	if !strings.HasPrefix(secret, "whsec_") {
		tab.fatalf("created secret %q", secret)
	}
	var endpointID int64
	if err := env.pool.QueryRow(context.Background(), "SELECT id FROM endpoints WHERE partner_id = $1", partnerID).Scan(&endpointID); err != nil {
		t.Fatalf("the endpoint was not saved: %v", err)
	}
	// The address bar already names the endpoint's page, so a reload cannot
	// show the secret again.
	if got, want := evalJS[string](tab, "location.pathname"), fmt.Sprintf("/endpoints/%d", endpointID); got != want {
		tab.fatalf("after creating the endpoint the address is %s, want %s", got, want)
	}
	tab.screenshot("onboarding-created")
	tab.clickToLoad("[data-testid=created-health-link]", sel("[data-testid=endpoint-health]"))
	if strings.Contains(evalJS[string](tab, "document.documentElement.outerHTML"), "whsec_") {
		tab.fatalf("the endpoint page shows the secret again")
	}
	tab.screenshot("onboarding-endpoint-health")

	t.Run("api keys", func(t *testing.T) {
		tab := tab.with(t)
		tab.open("/settings/api-keys")
		tab.waitUntil("the API keys page", sel("[data-testid=api-key-form]"), stepTimeout)
		tab.do("name the key", chromedp.SendKeys(chromedp.CSS("#key-name"), "checkout"))
		tab.clickToLoad("[data-testid=api-key-create]", sel("[data-testid=new-api-key] #new-api-key-value"))
		key := tab.text("#new-api-key-value")
		if !strings.HasPrefix(key, "hk_") {
			tab.fatalf("new key %q", key)
		}
		tab.screenshot("api-key-created")
		if got := apiStatus(t, base, key); got != http.StatusOK {
			t.Fatalf("the new key: %d, want 200", got)
		}
		prefix := ""
		for _, p := range evalJS[[]string](tab, `[...document.querySelectorAll("[data-testid=api-key-row]")].map(r => r.dataset.prefix)`) {
			if p != "" && strings.HasPrefix(key, p) {
				prefix = p
			}
		}
		if prefix == "" {
			tab.fatalf("no row for the new key")
		}
		revokedRow := fmt.Sprintf(`[data-testid=api-key-row][data-prefix=%s]`, jsString(prefix))
		tab.acceptConfirms()
		tab.clickToLoad(revokedRow+" [data-testid=api-key-revoke]", sel(revokedRow)+` && !`+sel(revokedRow+" [data-testid=api-key-revoke]"))
		if !strings.Contains(tab.text(revokedRow), "revoked") {
			tab.fatalf("the revoked key's row: %s", tab.text(revokedRow))
		}
		tab.screenshot("api-key-revoked")
		if got := apiStatus(t, base, key); got != http.StatusUnauthorized {
			t.Fatalf("the revoked key: %d, want 401", got)
		}
	})
}

// apiStatus calls the API over HTTP with a key.
func apiStatus(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/partners", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func countWhere(t *testing.T, env *testEnv, table, where string) int {
	t.Helper()
	var n int
	if err := env.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
