package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEmailChannelAPI: an email channel takes recipients instead of a URL,
// each refused address names the recipients field, and the channel's
// endpoint is of kind email with the addresses as its mailto URL.
func TestEmailChannelAPI(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	for _, bad := range []map[string]any{
		{"name": "mail", "style": "email", "kinds": []string{"endpoint.disabled"}},
		{"name": "mail", "style": "email", "recipients": []string{"not-an-address"}, "kinds": []string{"endpoint.disabled"}},
		{"name": "mail", "style": "email", "recipients": []string{"Ops <ops@acme.test>"}, "kinds": []string{"endpoint.disabled"}},
	} {
		mustError(t, env.do(http.MethodPost, "/api/v1/notification-channels", bad), http.StatusUnprocessableEntity, "recipients")
	}
	mustError(t, env.do(http.MethodPost, "/api/v1/notification-channels", map[string]any{"name": "x", "style": "pager",
		"kinds": []string{"endpoint.disabled"}}), http.StatusUnprocessableEntity, "style")
	rec := env.do(http.MethodPost, "/api/v1/notification-channels", map[string]any{"name": "on-call mail", "style": "email",
		"recipients": []string{"ops@acme.test", " oncall@acme.test", "OPS@acme.test"}, "kinds": []string{"endpoint.disabled", "certificate.expiring"}})
	mustStatus(t, rec, http.StatusCreated)
	ch := decodeBody[channelJSON](t, rec)
	if strings.Join(ch.Recipients, ",") != "ops@acme.test,oncall@acme.test" || ch.URL != "" || ch.Secret != "" {
		t.Fatalf("created %+v", ch)
	}
	var kind, u string
	if err := env.pool.QueryRow(context.Background(), "SELECT kind, url FROM endpoints WHERE id = $1", ch.EndpointID).Scan(&kind, &u); err != nil {
		t.Fatal(err)
	}
	if kind != "email" || u != "mailto:ops@acme.test,oncall@acme.test" {
		t.Fatalf("endpoint %s %s", kind, u)
	}
	rec = env.do(http.MethodGet, "/api/v1/notification-channels", nil)
	mustStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), `"recipients":["ops@acme.test","oncall@acme.test"]`) {
		t.Fatalf("list %s", rec.Body)
	}
}

// TestPartnerContacts: the operator allows a partner's contacts (API and
// partner page), the partner sets them in its portal (a private webhook
// URL refused by the partner guard, the field named), each change is
// audited without URLs or secrets, and partner Beta's portal never shows
// or changes Alpha's contacts.
func TestPartnerContacts(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t)
	env := f.env
	ctx := context.Background()
	path := func(pid int64) string { return "/api/v1/partners/" + itoa64(pid) + "/notification-contacts" }

	t.Run("off until the operator allows it", func(t *testing.T) {
		res, doc := f.alpha.get("/portal/notifications")
		if res.StatusCode != http.StatusOK || testid(doc, "contacts-off").Length() != 1 || testid(doc, "contacts-form").Length() != 0 {
			t.Fatalf("%d: %s", res.StatusCode, testid(doc, "portal-contacts").Text())
		}
		res, _ = f.alpha.postForm("/portal/notifications", url.Values{"emails": {"ops@alpha.test"}})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("save while off: %d", res.StatusCode)
		}
	})
	t.Run("operator allows it by the API", func(t *testing.T) {
		rec := env.do(http.MethodPatch, path(f.a), map[string]any{"enabled": true})
		mustStatus(t, rec, http.StatusOK)
		if v := decodeBody[contactsJSON](t, rec); !v.Enabled || len(v.Kinds) != 5 {
			t.Fatalf("%+v", v)
		}
		mustError(t, env.do(http.MethodPatch, path(f.a), map[string]any{"emails": []string{"nope"}}), http.StatusUnprocessableEntity, "emails")
		mustError(t, env.do(http.MethodPatch, path(999999), map[string]any{"enabled": true}), http.StatusNotFound, "")
	})
	t.Run("partner sets its contacts in the portal", func(t *testing.T) {
		res, doc := f.alpha.postForm("/portal/notifications", url.Values{"emails": {"ops@alpha.test\noncall@alpha.test"}, "webhook_url": {"http://10.1.2.3/hook"}})
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testid(doc, "portal-contacts").Text(), "private") {
			t.Fatalf("private webhook: %d %s", res.StatusCode, testid(doc, "portal-contacts").Text())
		}
		res, doc = f.alpha.postForm("/portal/notifications", url.Values{"emails": {"ops@alpha.test\noncall@alpha.test"}, "webhook_url": {f.recvA.URL + "/contact?token=t0ken"}})
		if res.StatusCode != http.StatusOK || testid(doc, "contacts-saved").Length() != 1 || !strings.Contains(testid(doc, "contacts-secret").Text(), "whsec_") {
			t.Fatalf("save: %d %s", res.StatusCode, testid(doc, "portal-contacts").Text())
		}
		rec := env.do(http.MethodGet, path(f.a), nil)
		mustStatus(t, rec, http.StatusOK)
		v := decodeBody[contactsJSON](t, rec)
		if strings.Join(v.Emails, ",") != "ops@alpha.test,oncall@alpha.test" || !strings.HasSuffix(v.WebhookURL, "/contact?token=t0ken") || v.WebhookSecret != "" {
			t.Fatalf("%+v", v)
		}
		var setBy string
		if err := env.pool.QueryRow(ctx, `SELECT e.url_set_by FROM notification_channels c JOIN endpoints e ON e.id = c.endpoint_id
			WHERE c.partner_id = $1 AND c.style = 'webhook'`, f.a).Scan(&setBy); err != nil || setBy != "partner" {
			t.Fatalf("contact webhook url_set_by %q: %v", setBy, err)
		}
	})
	t.Run("audited without URLs or secrets", func(t *testing.T) {
		var details string
		if err := env.pool.QueryRow(ctx, `SELECT string_agg(actor || ' ' || details::text, ' | ' ORDER BY id) FROM audit_log WHERE action = 'partner.notification_contacts' AND target_id = $1`, itoa64(f.a)).Scan(&details); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(details, `"enabled": true`) || !strings.Contains(details, "partner Alpha (portal)") || !strings.Contains(details, `"emails": 2`) {
			t.Fatalf("audit: %s", details)
		}
		if strings.Contains(details, "t0ken") || strings.Contains(details, "whsec_") {
			t.Fatalf("audit shows a secret: %s", details)
		}
	})
	t.Run("partner Beta sees only its own", func(t *testing.T) {
		beta := env.portalSignIn(f.base, f.b, "Beta")
		_, doc := beta.get("/portal/notifications")
		if strings.Contains(doc.Text(), "alpha.test") || testid(doc, "contacts-off").Length() != 1 {
			t.Fatalf("beta's page: %s", testid(doc, "portal-contacts").Text())
		}
		env.do(http.MethodPatch, path(f.b), map[string]any{"enabled": true})
		res, _ := beta.postForm("/portal/notifications", url.Values{"emails": {"ops@beta.test"}})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("beta save %d", res.StatusCode)
		}
		a := decodeBody[contactsJSON](t, env.do(http.MethodGet, path(f.a), nil))
		b := decodeBody[contactsJSON](t, env.do(http.MethodGet, path(f.b), nil))
		if strings.Join(a.Emails, ",") != "ops@alpha.test,oncall@alpha.test" || strings.Join(b.Emails, ",") != "ops@beta.test" || b.WebhookURL != "" {
			t.Fatalf("alpha %+v beta %+v", a, b)
		}
	})
	t.Run("partner page shows and switches", func(t *testing.T) {
		op := env.signIn(f.base, "op@ops.test", "operator")
		_, doc := op.get("/partners/" + itoa64(f.a))
		panel := testid(doc, "partner-contacts")
		if panel.AttrOr("data-enabled", "") != "true" || !strings.Contains(panel.Text(), "ops@alpha.test") {
			t.Fatalf("panel: %s", panel.Text())
		}
		res, doc := op.postForm("/partners/"+itoa64(f.a)+"/notification-contacts", url.Values{"enabled": {"false"}})
		if res.StatusCode != http.StatusOK || testid(doc, "partner-contacts").AttrOr("data-enabled", "") != "false" {
			t.Fatalf("toggle: %d", res.StatusCode)
		}
	})
}
