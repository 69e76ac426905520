package web

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// cspProbe records, from before any page script runs, every violation of
// the page's Content-Security-Policy the browser reports.
const cspProbe = `window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + (e.sample ? " (" + e.sample + ")" : ""));
});`

// pageCSPReport is what one visited page showed of its policy.
type pageCSPReport struct {
	Header     string   `json:"header"`
	Violations []string `json:"violations"`
	Inline     []string `json:"inline"`
}

// cspCheck reads the page's policy header (fetched again, same origin),
// the violations so far, and any inline script or on* handler left in
// the document.
const cspCheck = `(async () => {
  const res = await fetch(location.href, {credentials: "same-origin", redirect: "manual"});
  const inline = [];
  document.querySelectorAll("script:not([src])").forEach((s) => inline.push("inline <script>: " + s.textContent.slice(0, 60)));
  document.querySelectorAll("*").forEach((el) => {
    for (const a of el.attributes) {
      if (a.name.startsWith("on")) inline.push("<" + el.tagName.toLowerCase() + " " + a.name + ">");
    }
  });
  return {header: res.headers.get("content-security-policy") || "", violations: window.__cspViolations || [], inline};
})()`

// TestBrowserContentSecurityPolicy visits every page of the dashboard and
// the partner portal (every GET route that answers HTML, found from the
// route table, so a new page cannot be missed) in Chromium and fails on
// any policy violation the browser reports, any inline script or handler,
// and any page served without the policy.
func TestBrowserContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	env := newEnv(t, allowLoopback)
	base := env.server()
	ok := newHookReceiver(t, http.StatusOK, 0, "ok")
	down := newHookReceiver(t, http.StatusServiceUnavailable, 0, "maintenance")
	tracker := newHookReceiver(t, http.StatusOK, 0, "OK")
	acme := env.createPartner("Acme Retail")
	orders := env.createEndpoint(map[string]any{"partner_id": acme, "name": "orders", "kind": "webhook", "url": ok.URL + "/hooks"}).ID
	legacy := env.createEndpoint(map[string]any{"partner_id": acme, "name": "legacy", "kind": "webhook", "url": down.URL + "/crm", "max_attempts": 1}).ID
	keitaro := env.createEndpoint(map[string]any{"partner_id": acme, "name": "keitaro", "kind": "postback", "method": "GET",
		"url": tracker.URL + "/postback?subid={click_id}&payout={payout}", "success_body_contains": "OK",
		"conversion_key": "click_id", "conversion_status": "status", "fire_on": "change"}).ID
	env.startWorker()
	var event string
	for i := range 3 {
		event = env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("c-%d", i), "payout": 2.5, "status": "approved"})
	}
	env.waitDB("deliveries done and dead letters kept", 20*time.Second,
		`SELECT count(*) FILTER (WHERE status = 'dead') = 3 AND count(*) FILTER (WHERE status = 'delivered') = 6 FROM deliveries`)
	rec := env.do(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"status": "dead", "endpoint_id": legacy})
	mustStatus(t, rec, http.StatusAccepted)
	replay := decodeBody[struct {
		ID int64 `json:"id"`
	}](t, rec).ID
	env.exec("UPDATE partners SET portal_manage_endpoints = true WHERE id = $1", acme)
	env.createDashUser("admin@hookline.test", "admin")

	tab := newChromeTab(t, base)
	if _, err := chromedp.Call(tab.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspProbe}); err != nil {
		t.Fatalf("install the policy probe: %v", err)
	}

	// Each GET route of the table, with the concrete path that visits it.
	// Routes that answer no HTML page are named with the reason.
	id := func(n int64) string { return fmt.Sprint(n) }
	pages := map[string][]string{
		"/login":                      {"/login"},
		"/login/code":                 {"/login/code"},
		"/account":                    {"/account", "click:[data-testid=two-factor-setup]:[data-testid=totp-qr]"},
		"/":                           {"/"},
		"/overview/live":              {"/overview/live"},
		"/endpoints":                  {"/endpoints"},
		"/endpoints/table":            {"/endpoints/table"},
		"/endpoints/:id":              {"/endpoints/" + id(orders), "/endpoints/" + id(legacy)},
		"/endpoints/:id/health":       {"/endpoints/" + id(orders) + "/health"},
		"/endpoints/:id/edit":         {"/endpoints/" + id(orders) + "/edit", "/endpoints/" + id(keitaro) + "/edit"},
		"/endpoints/:id/egress":       {"/endpoints/" + id(orders) + "/egress"},
		"/endpoints/retry-window":     {"/endpoints/retry-window?max_attempts=5"},
		"/events":                     {"/events"},
		"/events/new":                 {"/events/new"},
		"/events/:id":                 {"/events/" + event},
		"/deliveries/replay":          {"/deliveries/replay?status=dead&endpoint_id=" + id(legacy)},
		"/replays/:id":                {"/replays/" + id(replay)},
		"/dead-letters":               {"/dead-letters"},
		"/dead-letters/cluster":       {"link:/dead-letters:[hx-get^='/dead-letters/cluster']"},
		"/dead-letters/count":         {"/dead-letters/count"},
		"/dead-letters/progress":      {"/dead-letters/progress"},
		"/partners":                   {"/partners"},
		"/partners/new":               {"/partners/new"},
		"/partners/:id":               {"/partners/" + id(acme)},
		"/partners/:id/edit":          {"/partners/" + id(acme) + "/edit"},
		"/partners/:id/endpoints/new": {"/partners/" + id(acme) + "/endpoints/new", "/partners/" + id(acme) + "/endpoints/new?kind=postback"},
		"/audit":                      {"/audit"},
		"/conversions":                {"/conversions"},
		"/conversions/history":        {"/conversions/history?endpoint_id=" + id(keitaro) + "&key=c-0"},
		"/settings/api-keys":          {"/settings/api-keys"},
		"/settings/users":             {"/settings/users"},
		"/settings/notifications":     {"/settings/notifications"},
		// The portal: a sign-in link's page submits itself (from
		// static/js) and lands in the portal.
		"/portal/links/:token":        {"portal-link:/portal/links/"},
		"/portal/signin":              {"portal-link:/portal/signin?token="},
		"/portal":                     {"/portal"},
		"/portal/":                    {"/portal/"},
		"/portal/endpoints/:id":       {"/portal/endpoints/" + id(orders)},
		"/portal/endpoints/:id/edit":  {"/portal/endpoints/" + id(keitaro) + "/edit"},
		"/portal/endpoints/new":       {"/portal/endpoints/new"},
		"/portal/notifications":       {"/portal/notifications"},
		"/portal/events":              {"/portal/events"},
		"/portal/events/:id":          {"/portal/events/" + event},
		"/portal/conversions":         {"/portal/conversions"},
		"/portal/conversions/history": {"/portal/conversions/history?endpoint_id=" + id(keitaro) + "&key=c-0"},
	}
	notHTML := map[string]string{
		"/healthz": "JSON probe", "/readyz": "JSON probe", "/metrics": "Prometheus text", "/api/openapi.json": "JSON",
		"/static/*": "assets", "/audit/export.csv": "CSV download",
		// Single sign-on: redirects to the provider and back (a refusal
		// is the login page, visited above).
		"/login/oidc": "redirect", "/login/oidc/callback": "redirect",
	}
	var missing []string
	for _, r := range env.srv.Routes() {
		if r.Method != http.MethodGet || strings.HasPrefix(r.Path, "/api/v1") {
			continue
		}
		if _, ok := pages[r.Path]; !ok && notHTML[r.Path] == "" {
			missing = append(missing, r.Path)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("GET routes this test does not visit (add them to its table): %v", missing)
	}

	visit := func(path string) {
		t.Helper()
		tab.open(path)
		tab.waitUntil("the page "+path, `document.readyState === "complete"`, stepTimeout)
		// htmx requests that load fragments (hx-trigger="load") run now.
		tab.waitUntil("htmx settled on "+path, `!document.querySelector(".htmx-request")`, stepTimeout)
		got := evalJS[pageCSPReport](tab, cspCheck)
		if got.Header != contentSecurityPolicy {
			t.Errorf("%s: Content-Security-Policy %q", path, got.Header)
		}
		for _, v := range got.Violations {
			t.Errorf("%s: policy violation: %s", path, v)
		}
		for _, v := range got.Inline {
			t.Errorf("%s: %s", path, v)
		}
	}
	order := []string{"/login"}
	for p := range pages {
		if !strings.HasPrefix(p, "/portal") && !strings.HasPrefix(p, "/login") {
			order = append(order, p)
		}
	}
	slices.Sort(order[1:])
	visit("/login") // signed out
	visit("/login/code")
	// The probe sees what the browser blocks: an inline script injected
	// now must be reported, or the test could never fail.
	evalJS[bool](tab, `(() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1"; document.body.appendChild(s); return true })()`)
	tab.waitUntil("the probe's own violation", `window.__cspViolations.length === 1 && !window.__ran`, stepTimeout)
	tab.login("admin@hookline.test")
	for _, route := range order[1:] {
		for _, path := range pages[route] {
			if rest, ok := strings.CutPrefix(path, "click:"); ok {
				// A page reached by a button on the page visited before.
				button, shown, _ := strings.Cut(rest, ":")
				tab.clickToLoad(button, sel(shown))
				got := evalJS[pageCSPReport](tab, cspCheck)
				for _, v := range append(got.Violations, got.Inline...) {
					t.Errorf("after %s: %s", button, v)
				}
				continue
			}
			if rest, ok := strings.CutPrefix(path, "link:"); ok {
				from, css, _ := strings.Cut(rest, ":")
				tab.open(from)
				path = tab.attr(css, "href")
				if path == "" {
					path = tab.attr(css, "hx-get")
				}
				if path == "" {
					t.Fatalf("no link %s on %s", css, from)
				}
			}
			visit(path)
		}
	}
	// The portal, signed in through a link the way a partner is.
	link := env.portalLink(acme)
	token := strings.TrimPrefix(link, "/portal/signin?token=")
	tab.open("/portal/links/" + token)
	tab.waitUntil("the portal after the sign-in page submitted itself", `location.pathname === "/portal/" && document.readyState === "complete"`, stepTimeout)
	if v := evalJS[pageCSPReport](tab, cspCheck); len(v.Violations) > 0 {
		t.Errorf("sign-in link page: %v", v.Violations)
	}
	link = env.portalLink(acme)
	tab.open(link)
	tab.waitUntil("the portal after the second sign-in page", `location.pathname === "/portal/" && document.readyState === "complete"`, stepTimeout)
	var portalOrder []string
	for p := range pages {
		if strings.HasPrefix(p, "/portal") && !strings.HasPrefix(pages[p][0], "portal-link:") {
			portalOrder = append(portalOrder, p)
		}
	}
	slices.Sort(portalOrder)
	for _, route := range portalOrder {
		for _, path := range pages[route] {
			visit(path)
		}
	}
}
