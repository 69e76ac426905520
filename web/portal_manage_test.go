package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/db"
)

// portalEndpointRow is what the management tests read back of an endpoint.
type portalEndpointRow struct {
	partnerID  int64
	enabled    bool
	reason     string
	eventTypes []string
}

func (e *testEnv) portalEndpointRow(id int64) portalEndpointRow {
	e.t.Helper()
	var r portalEndpointRow
	if err := e.pool.QueryRow(context.Background(), "SELECT partner_id, enabled, disabled_reason, event_types FROM endpoints WHERE id = $1", id).
		Scan(&r.partnerID, &r.enabled, &r.reason, &r.eventTypes); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *testEnv) auditCount(actor, action string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE actor = $1 AND action = $2", actor, action).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestPortalManageEndpoints: creating, disabling / enabling and changing
// the event types of endpoints in the portal, only for a partner its
// operator allows it; refused (403, controls hidden) otherwise, and
// refused again at once when the operator turns it off.
func TestPortalManageEndpoints(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback, allowPartnerLoopback)
	base := env.server()
	recv := newHookReceiver(t, http.StatusOK, 0, "ok")
	pid := env.createPartner("Alpha")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "alpha-hooks", "kind": "webhook", "url": recv.URL + "/a"})
	epPath := "/portal/endpoints/" + itoa64(ep.ID)
	partner := env.portalSignIn(base, pid, "Alpha")
	const actor = "partner Alpha (portal)"
	endpointCount := func() int {
		var n int
		if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM endpoints").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	refused := func(t *testing.T) {
		t.Helper()
		_, doc := partner.get("/portal/")
		if testid(doc, "new-endpoint").Length() != 0 {
			t.Fatal("the home page offers to add an endpoint")
		}
		_, doc = partner.get(epPath)
		if testid(doc, "portal-manage").Length() != 0 || testid(doc, "endpoint-disable").Length() != 0 {
			t.Fatal("the endpoint page shows the management panel")
		}
		if res, _ := partner.get("/portal/endpoints/new"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("new endpoint form: %d, want 403", res.StatusCode)
		}
		before, row := endpointCount(), env.portalEndpointRow(ep.ID)
		for path, form := range map[string]url.Values{
			"/portal/endpoints":             {"kind": {"webhook"}, "name": {"sneaky"}, "url": {recv.URL + "/s"}},
			"/portal/endpoints/preview":     {"url": {recv.URL + "/p?c={click_id}"}},
			epPath + "/disable":             {},
			epPath + "/enable":              {},
			epPath + "/event-types":         {"event_types": {"lead.created"}},
			"/portal/endpoints/999999/edit": nil, // not a management route: unaffected (404)
		} {
			if form == nil {
				continue
			}
			if res, _ := partner.postForm(path, form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("POST %s: %d, want 403", path, res.StatusCode)
			}
			if res, _ := partner.htmx(http.MethodPost, path, form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("htmx POST %s: %d, want 403", path, res.StatusCode)
			}
		}
		if endpointCount() != before {
			t.Fatal("a refused create wrote an endpoint")
		}
		if after := env.portalEndpointRow(ep.ID); after.enabled != row.enabled || strings.Join(after.eventTypes, ",") != strings.Join(row.eventTypes, ",") {
			t.Fatalf("a refused change changed the endpoint: %+v", after)
		}
	}

	t.Run("refused without the operator's permission", refused)

	t.Run("the operator allows it on the partner page, audited", func(t *testing.T) {
		viewer := env.signIn(base, "viewer@example.com", "viewer")
		if _, doc := viewer.get("/partners/" + itoa64(pid)); testid(doc, "portal-manage-setting").Length() != 1 || testid(doc, "portal-manage-toggle").Length() != 0 {
			t.Fatal("a viewer does not see the setting, or sees its switch")
		}
		if res, _ := viewer.postForm("/partners/"+itoa64(pid)+"/portal-manage", url.Values{"allowed": {"true"}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("a viewer changes it: %d", res.StatusCode)
		}
		op := env.signIn(base, "op@example.com", "operator")
		_, doc := op.get("/partners/" + itoa64(pid))
		if v, _ := testid(doc, "portal-manage-setting").Attr("data-allowed"); v != "false" || testid(doc, "portal-manage-toggle").Length() != 1 {
			t.Fatalf("partner page: allowed=%q, toggle %d", v, testid(doc, "portal-manage-toggle").Length())
		}
		res, doc := op.htmx(http.MethodPost, "/partners/"+itoa64(pid)+"/portal-manage", url.Values{"allowed": {"true"}})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("allow: %d", res.StatusCode)
		}
		if v, _ := testid(doc, "portal-manage-setting").Attr("data-allowed"); v != "true" {
			t.Fatalf("panel after allowing: %q", v)
		}
		if n := env.auditCount("user:op@example.com", "partner.portal_manage_endpoints"); n != 1 {
			var actors string
			if err := env.pool.QueryRow(t.Context(), "SELECT string_agg(actor, ',') FROM audit_log WHERE action = 'partner.portal_manage_endpoints'").Scan(&actors); err != nil {
				t.Fatal(err)
			}
			t.Fatalf("audited %d times (actors %q)", n, actors)
		}
		// The open session follows at once.
		_, doc = partner.get("/portal/")
		if testid(doc, "new-endpoint").Length() != 1 {
			t.Fatal("no \"Add an endpoint\" for an allowed partner")
		}
	})

	t.Run("create a webhook: validated, the partner's, secret shown once, audited", func(t *testing.T) {
		res, doc := partner.get("/portal/endpoints/new?kind=webhook")
		if res.StatusCode != http.StatusOK || testid(doc, "portal-new-form").Length() != 1 {
			t.Fatalf("new form: %d", res.StatusCode)
		}
		// Invalid input: 422 with the field's message, nothing written.
		before := endpointCount()
		res, doc = partner.htmx(http.MethodPost, "/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {""}, "url": {"ftp://nowhere.invalid/x"},
			"event_types": {"bad type!"}})
		if res.StatusCode != http.StatusUnprocessableEntity || testid(doc, "portal-new-form").Length() != 1 {
			t.Fatalf("invalid create: %d", res.StatusCode)
		}
		for _, field := range []string{"name", "url", "event_types"} {
			if doc.Find(`[data-field="`+field+`"] [data-testid=field-error]`).Text() == "" {
				t.Fatalf("no error shown for %s", field)
			}
		}
		if endpointCount() != before {
			t.Fatal("an invalid create wrote an endpoint")
		}
		// A valid one, with another partner's id in the form (ignored).
		other := env.createPartner("Other")
		// Settings the form does not offer (the operator's) are ignored too.
		res, doc = partner.postForm("/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {"alpha-orders"}, "url": {recv.URL + "/orders"},
			"event_types": {"order.paid, order.refunded"}, "headers": {"X-Alpha-Token: t0ken"}, "partner_id": {itoa64(other)},
			"max_attempts": {"50"}, "rate_per_sec": {"100000"}, "max_in_flight": {"1000"}, "timeout_ms": {"120000"}, "disable_after_failures": {"0"}})
		if res.StatusCode != http.StatusCreated || testid(doc, "portal-created").Length() != 1 {
			t.Fatalf("create: %d", res.StatusCode)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("created page Cache-Control %q", cc)
		}
		secret := testid(doc, "portal-created").Find("[data-testid=copybox-value]").Text()
		var id int64
		var pidGot int64
		if err := env.pool.QueryRow(t.Context(), "SELECT id, partner_id FROM endpoints WHERE name = 'alpha-orders'").Scan(&id, &pidGot); err != nil {
			t.Fatal(err)
		}
		if pidGot != pid {
			t.Fatalf("created for partner %d, want %d", pidGot, pid)
		}
		var attempts, inFlight, timeout, disableAfter int
		var rate *float64
		if err := env.pool.QueryRow(t.Context(), "SELECT max_attempts, max_in_flight, timeout_ms, disable_after_failures, rate_per_sec FROM endpoints WHERE id = $1", id).
			Scan(&attempts, &inFlight, &timeout, &disableAfter, &rate); err != nil {
			t.Fatal(err)
		}
		if attempts != defaultMaxAttempts || inFlight != defaultMaxInFlight || timeout != defaultTimeoutMs || disableAfter != defaultDisableAfterFailures || rate != nil {
			t.Fatalf("operator settings taken from the form: attempts %d, in flight %d, timeout %d, disable after %d, rate %v", attempts, inFlight, timeout, disableAfter, rate)
		}
		row := env.portalEndpointRow(id)
		if strings.Join(row.eventTypes, ",") != "order.paid,order.refunded" || !row.enabled {
			t.Fatalf("created %+v", row)
		}
		// The secret shown is the one that signs.
		var sealed []byte
		if err := env.pool.QueryRow(t.Context(), "SELECT ciphertext FROM endpoint_secrets WHERE endpoint_id = $1", id).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		plain, err := env.srv.box.Open(id, sealed)
		if err != nil || string(plain) != secret || !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("shown secret %q is not the stored one (%v)", secret, err)
		}
		if env.auditCount(actor, "endpoint.create") != 1 {
			t.Fatal("create not audited as the partner")
		}
		// Shown once: the endpoint page does not show it.
		_, doc = partner.get("/portal/endpoints/" + itoa64(id))
		if strings.Contains(doc.Text(), secret) {
			t.Fatal("the secret is shown again")
		}
	})

	t.Run("the SSRF guard applies", func(t *testing.T) {
		strict := newEnvWithPool(t, env.pool) // no loopback allowance
		sb := strict.server()
		sp := strict.portalSignIn(sb, pid, "Alpha")
		res, doc := sp.postForm("/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {"alpha-internal"}, "url": {"http://127.0.0.1:9/x"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("loopback URL: %d", res.StatusCode)
		}
		if msg := doc.Find(`[data-field="url"] [data-testid=field-error]`).Text(); !strings.Contains(msg, "127.0.0.1") && !strings.Contains(msg, "loopback") {
			t.Fatalf("url error %q does not name the refused address", msg)
		}
	})

	t.Run("create a postback with its preview and warnings", func(t *testing.T) {
		tmpl := recv.URL + "/pb?cid={click_id}&payout={payout}"
		res, doc := partner.htmx(http.MethodPost, "/portal/endpoints/preview", url.Values{"url": {tmpl}, "macro_style": {"braces"}, "event_types": {"conversion.approved"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "payout") {
			t.Fatalf("preview: %d %q", res.StatusCode, doc.Text())
		}
		res, doc = partner.postForm("/portal/endpoints", url.Values{"kind": {"postback"}, "name": {"alpha-tracker"}, "url": {tmpl},
			"macro_style": {"braces"}, "event_types": {"conversion.approved"}})
		if res.StatusCode != http.StatusCreated || testid(doc, "portal-created").Length() != 1 {
			t.Fatalf("postback create: %d", res.StatusCode)
		}
		var kind, u string
		if err := env.pool.QueryRow(t.Context(), "SELECT kind, url FROM endpoints WHERE name = 'alpha-tracker' AND partner_id = $1", pid).Scan(&kind, &u); err != nil || kind != "postback" || u != tmpl {
			t.Fatalf("stored %q %q (%v)", kind, u, err)
		}
		// A template with an unfillable macro is refused like the operator's.
		res, _ = partner.postForm("/portal/endpoints", url.Values{"kind": {"postback"}, "name": {"alpha-bad"}, "url": {recv.URL + "/pb?cid={click_id"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("broken template: %d", res.StatusCode)
		}
	})

	t.Run("event types: saved, validated, audited", func(t *testing.T) {
		_, doc := partner.get(epPath)
		if testid(doc, "portal-manage").Length() != 1 || testid(doc, "event-types-form").Length() != 1 {
			t.Fatal("no management panel for an allowed partner")
		}
		res, doc := partner.htmx(http.MethodPost, epPath+"/event-types", url.Values{"event_types": {"conversion.approved, lead.*"}})
		if res.StatusCode != http.StatusOK || testid(doc, "manage-saved").Length() != 1 {
			t.Fatalf("save event types: %d", res.StatusCode)
		}
		if got := env.portalEndpointRow(ep.ID).eventTypes; strings.Join(got, ",") != "conversion.approved,lead.*" {
			t.Fatalf("event types %v", got)
		}
		res, doc = partner.htmx(http.MethodPost, epPath+"/event-types", url.Values{"event_types": {"bad type!"}})
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Text(), "not a valid event type") {
			t.Fatalf("invalid event types: %d %q", res.StatusCode, doc.Text())
		}
		if got := env.portalEndpointRow(ep.ID).eventTypes; strings.Join(got, ",") != "conversion.approved,lead.*" {
			t.Fatalf("an invalid save changed the event types: %v", got)
		}
		// Without htmx: back to the endpoint page.
		res, _ = partner.postForm(epPath+"/event-types", url.Values{"event_types": {""}})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != epPath {
			t.Fatalf("form save: %d at %s", res.StatusCode, res.Request.URL)
		}
		if got := env.portalEndpointRow(ep.ID).eventTypes; len(got) != 0 {
			t.Fatalf("event types after clearing: %v", got)
		}
		if env.auditCount(actor, "endpoint.update") != 2 {
			t.Fatalf("event type changes audited %d times", env.auditCount(actor, "endpoint.update"))
		}
	})

	t.Run("disable and enable, audited", func(t *testing.T) {
		res, doc := partner.htmx(http.MethodPost, epPath+"/disable", url.Values{})
		if res.StatusCode != http.StatusOK || testid(doc, "endpoint-enable").Length() != 1 {
			t.Fatalf("disable: %d", res.StatusCode)
		}
		if r := env.portalEndpointRow(ep.ID); r.enabled || r.reason != "disabled by "+actor {
			t.Fatalf("after disable: %+v", r)
		}
		res, _ = partner.postForm(epPath+"/enable", url.Values{})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != epPath {
			t.Fatalf("enable: %d at %s", res.StatusCode, res.Request.URL)
		}
		if r := env.portalEndpointRow(ep.ID); !r.enabled || r.reason != "" {
			t.Fatalf("after enable: %+v", r)
		}
		if env.auditCount(actor, "endpoint.update") != 4 {
			t.Fatalf("disable/enable audited %d times in all", env.auditCount(actor, "endpoint.update"))
		}
	})

	t.Run("the API turns it off: refused again at once", func(t *testing.T) {
		rec := env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(pid), map[string]any{"portal_manage_endpoints": false})
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[partnerJSON](t, rec); got.PortalManageEndpoints || got.Name != "Alpha" {
			t.Fatalf("PATCH answered %+v", got)
		}
		refused(t)
	})
}

// TestPartnerAPIPortalManage: the flag in the partner API — create, GET,
// PATCH (with the other fields), validation and audit.
func TestPartnerAPIPortalManage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rec := env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": "Allowed", "portal_manage_endpoints": true})
	mustStatus(t, rec, http.StatusCreated)
	p := decodeBody[partnerJSON](t, rec)
	if !p.PortalManageEndpoints {
		t.Fatal("created without the flag")
	}
	rec = env.do(http.MethodGet, "/api/v1/partners/"+itoa64(p.ID), nil)
	mustStatus(t, rec, http.StatusOK)
	if !decodeBody[partnerJSON](t, rec).PortalManageEndpoints {
		t.Fatal("GET does not show the flag")
	}
	plain := env.createPartner("Plain")
	rec = env.do(http.MethodGet, "/api/v1/partners/"+itoa64(plain), nil)
	if decodeBody[partnerJSON](t, rec).PortalManageEndpoints {
		t.Fatal("the flag is on by default")
	}
	rec = env.do(http.MethodGet, "/api/v1/partners", nil)
	mustStatus(t, rec, http.StatusOK)
	list := decodeBody[struct {
		Partners []partnerJSON `json:"partners"`
	}](t, rec)
	for _, q := range list.Partners {
		if q.PortalManageEndpoints != (q.ID == p.ID) {
			t.Fatalf("list shows %s with the flag %v", q.Name, q.PortalManageEndpoints)
		}
	}

	rec = env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"portal_manage_endpoints": true, "contact": "ops@plain.test"})
	mustStatus(t, rec, http.StatusOK)
	got := decodeBody[partnerJSON](t, rec)
	if !got.PortalManageEndpoints || got.Contact != "ops@plain.test" || got.Name != "Plain" {
		t.Fatalf("PATCH answered %+v", got)
	}
	stored, err := db.New(env.pool).PartnerGet(t.Context(), plain)
	if err != nil || !stored.PortalManageEndpoints {
		t.Fatalf("stored flag %v (%v)", stored.PortalManageEndpoints, err)
	}
	var n int
	if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM audit_log WHERE action = 'partner.portal_manage_endpoints' AND target_id = $1", itoa64(plain)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("flag change audited %d times", n)
	}
	// The same value again changes nothing and audits nothing.
	mustStatus(t, env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"portal_manage_endpoints": true}), http.StatusOK)
	if err := env.pool.QueryRow(t.Context(), "SELECT count(*) FROM audit_log WHERE action = 'partner.portal_manage_endpoints' AND target_id = $1", itoa64(plain)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("an unchanged flag audited: %d", n)
	}

	mustError(t, env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"portal_manage_endpoints": "yes"}), http.StatusUnprocessableEntity, "portal_manage_endpoints")
	mustError(t, env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"name": " "}), http.StatusUnprocessableEntity, "name")
	mustError(t, env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"name": "Allowed"}), http.StatusConflict, "name")
	mustError(t, env.do(http.MethodPatch, "/api/v1/partners/999999", map[string]any{"portal_manage_endpoints": true}), http.StatusNotFound, "")
	mustError(t, env.do(http.MethodPatch, "/api/v1/partners/"+itoa64(plain), map[string]any{"portal_manage_endpoints": false}, "Authorization", ""), http.StatusUnauthorized, "")
}
