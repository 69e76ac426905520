package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// editForm reads an endpoint's edit form back into values, as a browser
// would submit it unchanged.
func editForm(doc *goquery.Document) url.Values {
	form := url.Values{}
	doc.Find(`#endpoint-form input, #endpoint-form textarea, #endpoint-form select`).Each(func(_ int, s *goquery.Selection) {
		name, ok := s.Attr("name")
		if !ok {
			return
		}
		switch {
		case s.Is("textarea"):
			form.Add(name, s.Text())
		case s.Is("select"):
			form.Add(name, s.Find("option[selected]").AttrOr("value", s.Find("option").First().AttrOr("value", "")))
		case s.AttrOr("type", "") == "checkbox":
			if _, on := s.Attr("checked"); on {
				form.Add(name, s.AttrOr("value", ""))
			}
		default:
			form.Add(name, s.AttrOr("value", ""))
		}
	})
	return form
}

func TestDashboardFailureBudget(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "conversions", "kind": "webhook", "url": "https://hooks.test/in"})
	quiet := env.createEndpoint(map[string]any{"partner_id": pid, "name": "quiet", "kind": "webhook", "url": "https://hooks.test/q"})
	env.exec(`UPDATE endpoint_health SET failed_deliveries = 7, first_failed_at = now() - interval '41 hours 10 minutes' WHERE endpoint_id = $1`, ep.ID)
	op := env.signIn(base, "op@example.com", "operator")

	t.Run("progress on the endpoints table and the endpoint page", func(t *testing.T) {
		_, doc := op.get("/endpoints")
		row := func(id int64) *goquery.Selection {
			return doc.Find(fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"] [data-testid=failure-budget]`, id))
		}
		if got := strings.TrimSpace(row(ep.ID).Text()); got != "7 of 10 failures in 41 h" {
			t.Fatalf("table progress = %q", got)
		}
		if p := row(ep.ID).AttrOr("data-percent", ""); p != "70" {
			t.Fatalf("percent = %q", p)
		}
		if row(quiet.ID).Length() != 0 {
			t.Fatal("an endpoint without failures shows a budget line")
		}
		_, doc = op.get(fmt.Sprintf("/endpoints/%d", ep.ID))
		if got := strings.TrimSpace(testid(doc, "failure-budget").Text()); got != "7 of 10 failures in 41 h" {
			t.Fatalf("endpoint page progress = %q", got)
		}
	})

	t.Run("a budget-disabled endpoint says so", func(t *testing.T) {
		env.exec(`UPDATE endpoints SET enabled = false, disabled_cause = 'failure_budget', disabled_at = now(), disabled_reason = 'failure budget spent' WHERE id = $1`, quiet.ID)
		_, doc := op.get(fmt.Sprintf("/endpoints/%d", quiet.ID))
		if got := testid(doc, "failure-budget").Text(); !strings.Contains(got, "failure budget spent") {
			t.Fatalf("disabled endpoint page = %q", got)
		}
		if testid(doc, "endpoint-enable").Length() != 1 {
			t.Fatal("no Enable button for a disabled endpoint")
		}
		res, doc := op.htmx(http.MethodPost, fmt.Sprintf("/endpoints/%d/enable", quiet.ID), url.Values{})
		if res.StatusCode != http.StatusOK || testid(doc, "endpoint-enable").Length() != 0 || testid(doc, "endpoint-health").Length() != 1 {
			t.Fatalf("enable: %d", res.StatusCode)
		}
		var enabled bool
		var cause string
		if err := env.pool.QueryRow(context.Background(), `SELECT enabled, disabled_cause FROM endpoints WHERE id = $1`, quiet.ID).Scan(&enabled, &cause); err != nil || !enabled || cause != "" {
			t.Fatalf("after Enable: enabled=%v cause=%q (%v)", enabled, cause, err)
		}
		viewer := env.signIn(base, "viewer@example.com", "viewer")
		env.exec(`UPDATE endpoints SET enabled = false WHERE id = $1`, quiet.ID)
		if _, doc := viewer.get(fmt.Sprintf("/endpoints/%d", quiet.ID)); testid(doc, "endpoint-enable").Length() != 0 {
			t.Fatal("a viewer is offered Enable")
		}
	})

	t.Run("form fields", func(t *testing.T) {
		_, doc := op.get(fmt.Sprintf("/endpoints/%d/edit", ep.ID))
		form := editForm(doc)
		if form.Get("disable_after_failures") != "10" || form.Get("disable_after_hours") != "72" {
			t.Fatalf("edit form budget = %q / %q", form.Get("disable_after_failures"), form.Get("disable_after_hours"))
		}
		form.Set("disable_after_failures", "-3")
		res, doc := op.postForm(fmt.Sprintf("/endpoints/%d/edit", ep.ID), form)
		if res.StatusCode != http.StatusUnprocessableEntity ||
			!strings.Contains(doc.Find(`[data-field=disable_after_failures] [data-testid=field-error]`).Text(), "between 0 and 10000") {
			t.Fatalf("invalid budget: %d, %q", res.StatusCode, testid(doc, "form-errors").Text())
		}
		form.Set("disable_after_failures", "25")
		form.Set("disable_after_hours", "0")
		res, _ = op.postForm(fmt.Sprintf("/endpoints/%d/edit", ep.ID), form)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("saving the budget: %d", res.StatusCode)
		}
		var f, h int
		if err := env.pool.QueryRow(context.Background(), `SELECT disable_after_failures, disable_after_hours FROM endpoints WHERE id = $1`, ep.ID).Scan(&f, &h); err != nil || f != 25 || h != 0 {
			t.Fatalf("stored budget %d/%d (%v)", f, h, err)
		}
		_, doc = op.get(fmt.Sprintf("/partners/%d/endpoints/new?kind=webhook", pid))
		if v := doc.Find(`input[name=disable_after_failures]`).AttrOr("value", ""); v != "10" {
			t.Fatalf("new form default = %q", v)
		}
	})
}

func TestNotificationsSettingsPage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	admin := env.signIn(base, "admin@example.com", "admin")

	t.Run("admins only", func(t *testing.T) {
		op := env.signIn(base, "op@example.com", "operator")
		res, _ := op.get("/settings/notifications")
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("operator: %d", res.StatusCode)
		}
	})
	t.Run("field errors", func(t *testing.T) {
		res, doc := admin.postForm("/settings/notifications", url.Values{"name": {""}, "style": {"webhook"}, "url": {"http://10.0.0.1/x"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d", res.StatusCode)
		}
		for _, f := range []string{"name", "url"} {
			if doc.Find(fmt.Sprintf(`[data-field=%s] [data-testid=field-error]`, f)).Length() != 1 {
				t.Errorf("no error beside %s", f)
			}
		}
		if !strings.Contains(testid(doc, "channel-kinds").Text(), "choose at least one kind") {
			t.Error("no error for kinds")
		}
	})
	var channelID string
	t.Run("add shows the secret once", func(t *testing.T) {
		res, doc := admin.postForm("/settings/notifications", url.Values{"name": {"on-call"}, "style": {"webhook"},
			"url": {"https://hooks.test/notify"}, "kinds": {"breaker.opened", "endpoint.disabled"}})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/settings/notifications" {
			t.Fatalf("add: %d at %s", res.StatusCode, res.Request.URL)
		}
		secret := testid(doc, "new-channel-secret").Find("input, code").First()
		if v := secret.AttrOr("value", secret.Text()); !strings.HasPrefix(v, "whsec_") {
			t.Fatalf("secret box %q", testid(doc, "new-channel-secret").Text())
		}
		row := testid(doc, "channel-row")
		if row.Length() != 1 || !strings.Contains(row.Text(), "breaker.opened") {
			t.Fatalf("rows %q", row.Text())
		}
		_, doc = admin.get("/settings/notifications")
		if testid(doc, "new-channel-secret").Length() != 0 {
			t.Fatal("secret shown twice")
		}
		action := doc.Find(`[data-testid=channel-test]`).Closest("form").AttrOr("action", "")
		channelID = strings.Split(strings.TrimPrefix(action, "/settings/notifications/"), "/")[0]
	})
	t.Run("test and delete, audited", func(t *testing.T) {
		res, doc := admin.postForm("/settings/notifications/"+channelID+"/test", url.Values{})
		if res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "Test notification queued") {
			t.Fatalf("test: %d", res.StatusCode)
		}
		var tests int
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM notifications WHERE kind = 'test' AND channel_id = $1::bigint`, channelID).Scan(&tests); err != nil || tests != 1 {
			t.Fatalf("%d test notifications (%v)", tests, err)
		}
		res, doc = admin.postForm("/settings/notifications/"+channelID+"/delete", url.Values{})
		if res.StatusCode != http.StatusOK || testid(doc, "channel-row").Length() != 0 {
			t.Fatalf("delete: %d, %d rows", res.StatusCode, testid(doc, "channel-row").Length())
		}
		var audits int
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE actor LIKE '%admin@example.com%' AND action IN
			('notification_channel.create', 'notification_channel.test', 'notification_channel.delete')`).Scan(&audits); err != nil || audits != 3 {
			t.Fatalf("%d audit entries (%v)", audits, err)
		}
	})
}
