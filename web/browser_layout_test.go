package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// contrastJS lists every visible text whose colour has less than 4.5:1
// contrast (WCAG AA) against its effective background: the background
// colours of its ancestors composited up to the first opaque one (the page
// is white below everything), with the element's opacity applied to its
// text. SVG text is judged by its fill. Disabled controls are exempt, as
// WCAG exempts inactive components.
const contrastJS = `(() => {
  const parse = (s) => {
    const m = /rgba?\(([^)]*)\)/.exec(s || "");
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const over = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a),
    g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  };
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TITLE", "OPTION", "SELECT", "TEXTAREA"]);
  const bad = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (skip.has(el.tagName.toUpperCase()) || !el.checkVisibility()) continue;
    const svg = el instanceof SVGElement;
    if (svg && !["text", "tspan"].includes(el.tagName)) continue;
    if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "")) continue;
    if (el.closest(":disabled, [aria-disabled=true], .visually-hidden, [hidden]")) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== "visible" || style.display === "none") continue;
    const rect = el.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) continue;
    const o = opacity(el);
    if (o < 0.05) continue; // not shown (an idle loading indicator)
    const fg = parse(svg ? style.fill : style.color);
    if (!fg) continue;
    const bg = background(el);
    const text = over({...fg, a: fg.a * o}, bg);
    const l1 = lum(text), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    if (ratio < 4.5) {
      const label = el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
      bad.push(label + " " + JSON.stringify(el.textContent.trim().slice(0, 40)) + " " + ratio.toFixed(2) + ":1 (" + (svg ? style.fill : style.color) + " on rgb(" + [bg.r, bg.g, bg.b].map(Math.round).join(",") + "))");
    }
  }
  return bad;
})()`

// overflowJS lists what does not fit the viewport's width: the document
// scrolling sideways, any element wider than the viewport, and any
// sideways-scrolling region that hides part of its content (a table column
// cut off).
const overflowJS = `(() => {
  const vw = document.documentElement.clientWidth;
  const bad = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.dataset && el.dataset.testid ? "[" + el.dataset.testid + "]" : "") +
    (typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "");
  if (document.documentElement.scrollWidth > vw) bad.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px in " + vw);
  for (const el of document.body.querySelectorAll("*")) {
    if (el.getClientRects().length === 0 || !el.checkVisibility()) continue; // not shown (a closed <details>)
    if (el.matches("input, textarea, select")) continue; // a field scrolls its own value
    if (el.scrollWidth > vw) bad.push(name(el) + " is " + el.scrollWidth + " px wide in a " + vw + " px viewport");
    const s = getComputedStyle(el);
    if ((s.overflowX === "auto" || s.overflowX === "scroll") && el.scrollWidth > el.clientWidth + 1) {
      bad.push(name(el) + " hides " + (el.scrollWidth - el.clientWidth) + " px of its content sideways");
    }
  }
  return bad;
})()`

// overlapJS reports whether the navigation's links overlap the signed-in
// user's block (email, role, log out).
const overlapJS = `(() => {
  const user = document.querySelector("[data-testid=user]");
  if (!user) return ["no signed-in user block"];
  const bad = [];
  const boxes = [...user.querySelectorAll(".user-email, .user-role, button")].map((e) => [e, e.getBoundingClientRect()]);
  for (const a of document.querySelectorAll("[data-testid=nav] a")) {
    const r = a.getBoundingClientRect();
    for (const [e, b] of boxes) {
      if (r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom) {
        bad.push("the " + JSON.stringify(a.textContent.trim()) + " link overlaps " + e.className + " " + JSON.stringify(e.textContent.trim()));
      }
    }
    const nav = document.querySelector("[data-testid=nav]").getBoundingClientRect();
    if (r.right > nav.right + 1) bad.push("the " + JSON.stringify(a.textContent.trim()) + " link sticks out of the navigation");
  }
  const email = user.querySelector(".user-email").getBoundingClientRect();
  if (email.width < 40) bad.push("the email is squeezed to " + email.width + " px");
  return bad;
})()`

// TestBrowserLayoutAndContrast: on every main page, as an admin (the
// Settings link shown) with a long email, every text meets WCAG AA contrast,
// and at 1024 px nothing is cut off or scrolls sideways and the navigation
// does not run into the signed-in email. The dead-letters page is checked
// with its clusters expanded, at 1024 px and on a wide screen.
func TestBrowserLayoutAndContrast(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	ok := newHookReceiver(t, http.StatusOK, 0, "OK")
	acme := env.createPartner("Acme Retail International")
	clickwave := env.createPartner("Clickwave Performance Network")
	orders := env.createEndpoint(map[string]any{"partner_id": acme, "name": "orders-webhook-production", "kind": "webhook", "url": ok.URL + "/hooks/orders"}).ID
	keitaro := env.createEndpoint(map[string]any{"partner_id": clickwave, "name": "keitaro-postback", "kind": "postback", "method": "GET",
		"url": ok.URL + "/postback?subid={click_id}&payout={payout}", "success_body_contains": "OK"}).ID
	// Never sent to (it takes no conversions): its dead letters are seeded.
	crm := env.createEndpoint(map[string]any{"partner_id": acme, "name": "legacy-crm-sync", "kind": "webhook", "url": "https://crm.invalid/in", "max_attempts": 1,
		"event_types": []string{"order.created"}}).ID
	archived := env.createPartner("Old Partner")
	if _, err := env.pool.Exec(context.Background(), "UPDATE partners SET archived_at = now() WHERE id = $1", archived); err != nil {
		t.Fatal(err)
	}
	backfillLatency(t, env.pool, orders, 40*time.Millisecond, 0.01, 1)
	backfillLatency(t, env.pool, keitaro, 2600*time.Millisecond, 0.05, 2)
	env.seedDead(crm, "http_status", 401, "12.5", times(time.Now().Add(-3*time.Hour), 4, 10*time.Minute)...)
	env.seedDead(keitaro, "body_mismatch", 200, "3", times(time.Now().Add(-2*time.Hour), 3, time.Minute)...)
	env.seedDead(orders, "timeout", 0, "", times(time.Now().Add(-5*time.Hour), 5, time.Hour)...)
	w := env.startWorker()
	for i := range 4 {
		env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("click-%d", i), "payout": 2.5})
	}
	env.waitDB("the deliveries", 15*time.Second, `SELECT count(*) = 8 FROM deliveries WHERE status = 'delivered'`)
	if err := w.RefreshNow(context.Background()); err != nil {
		t.Fatal(err)
	}

	const email = "operations.lead@clickwave-affiliates.example"
	env.createDashUser(email, "admin")
	tab := newChromeTab(t, base)
	tab.login(email)

	pages := []struct{ name, path, ready string }{
		{"overview", "/", "[data-testid=tile]"},
		{"endpoints", "/endpoints", "[data-testid=endpoint-row]"},
		{"endpoint", fmt.Sprintf("/endpoints/%d", keitaro), "[data-testid=attempt-row]"},
		{"dead-letters", "/dead-letters", "[data-testid=cluster-row]"},
		{"dead-letters-endpoint", fmt.Sprintf("/dead-letters?endpoint=%d", crm), "[data-testid=cluster-row]"},
		{"partners", "/partners", "[data-testid=page-header]"},
		{"partners-archived", "/partners?archived=1", "[data-testid=page-header]"},
		{"partner", fmt.Sprintf("/partners/%d", acme), "[data-testid=page-header]"},
		{"endpoint-form", fmt.Sprintf("/partners/%d/endpoints/new?kind=postback&preset=keitaro", clickwave), "[data-testid=preview-url]"},
		{"audit", "/audit", "[data-testid=page-header]"},
		{"api-keys", "/settings/api-keys", "[data-testid=api-key-form]"},
		{"users", "/settings/users", "[data-testid=page-header]"},
	}
	check := func(t *testing.T, tab *chromeTab, what, js string) {
		t.Helper()
		if bad := evalJS[[]string](tab, js); len(bad) > 0 {
			t.Errorf("%s:\n  %s", what, strings.Join(bad, "\n  "))
		}
	}
	expandClusters := func(tab *chromeTab) {
		n := tab.count("[data-testid=cluster-expand]")
		evalJS[chromedp.Void](tab, `document.querySelectorAll("[data-testid=cluster-expand]").forEach((d) => { d.open = true; })`)
		tab.waitUntil("every cluster expanded", fmt.Sprintf(`document.querySelectorAll("[data-testid=cluster-deliveries]").length === %d`, n), stepTimeout)
	}
	for _, width := range []int64{1024, 1600} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			tab := tab.with(t)
			tab.do("set the window width", chromedp.EmulateViewport(width, 900))
			for _, p := range pages {
				t.Run(p.name, func(t *testing.T) {
					tab := tab.with(t)
					tab.open(p.path)
					tab.waitUntil(p.name, sel(p.ready), stepTimeout)
					if strings.HasPrefix(p.name, "dead-letters") {
						expandClusters(tab)
					}
					tab.screenshot(fmt.Sprintf("layout-%d-%s", width, p.name))
					check(t, tab, "text below 4.5:1 contrast", contrastJS)
					check(t, tab, "content that does not fit", overflowJS)
					check(t, tab, "the navigation and the signed-in user", overlapJS)
				})
			}
		})
	}
	t.Run("attempt log filter swaps in place", func(t *testing.T) {
		tab := tab.with(t)
		tab.do("set the window width", chromedp.EmulateViewport(1024, 900))
		tab.open(fmt.Sprintf("/endpoints/%d", orders))
		tab.waitUntil("the attempt log", sel("[data-testid=attempt-row]"), stepTimeout)
		evalJS[chromedp.Void](tab, `window.__hooklineSamePage = true`)
		tab.clickToSwap("[data-testid=attempts-failed]", "#endpoint-attempts", sel("[data-testid=attempts-failed]")+`.tagName === "STRONG"`)
		if !evalJS[bool](tab, `window.__hooklineSamePage === true && location.search.includes("attempts=failed")`) {
			tab.fatalf("the filter loaded a new page or did not update the address")
		}
	})
}
