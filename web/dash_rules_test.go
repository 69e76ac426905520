package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// mapRows reads the value map rows the form shows, filled ones only.
func mapRows(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid=map-row]`).Each(func(_ int, s *goquery.Selection) {
		f, _ := s.Find(`[name=map_field]`).Attr("value")
		from, _ := s.Find(`[name=map_from]`).Attr("value")
		to, _ := s.Find(`[name=map_to]`).Attr("value")
		if f != "" || from != "" || to != "" {
			out = append(out, f+":"+from+"="+to)
		}
	})
	return out
}

// TestEndpointFormValueMaps: a preset fills its tracker's value map rows,
// with blank rows to add more (no JavaScript needed); the preview shows
// the mapped value and the shared payout; the rows, the policy and the
// share are saved, shown again on the edit form and kept by an edit that
// does not touch them; a row without a field is an error next to the map.
func TestEndpointFormValueMaps(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")

	_, doc := op.get(fmt.Sprintf("/partners/%d/endpoints/new?kind=postback&preset=affise", pid))
	rows := mapRows(doc)
	if strings.Join(rows, " ") != "status:approved=1 status:declined=3 status:hold=5 status:pending=2" {
		t.Fatalf("Affise preset rows: %v", rows)
	}
	if n := doc.Find(`[data-testid=map-row]`).Length(); n != len(rows)+blankMapRows {
		t.Fatalf("%d rows, want %d filled and %d blank", n, len(rows), blankMapRows)
	}
	if doc.Find(`[data-testid=postback-rules] script`).Length() != 0 {
		t.Fatal("inline script in the rules section")
	}

	tmpl := "https://t.acme.invalid/postback?clickid={click_id}&status={status}&sum={payout}"
	_, prev := op.htmx(http.MethodPost, "/endpoints/preview", url.Values{"url": {tmpl}, "macro_style": {"braces"},
		"map_field": {"status", "status", ""}, "map_from": {"approved", "declined", ""}, "map_to": {"1", "3", ""}, "payout_share": {"70"}})
	if got := testid(prev, "preview-url").Text(); !strings.Contains(got, "status=1&sum=8.75") {
		t.Fatalf("preview %q does not show the mapped status and the 70 %% share", got)
	}

	form := endpointForm(map[string]string{"name": "affise", "url": tmpl, "macro_style": "braces", "unmapped": "skip", "payout_share": "62.5"})
	form["map_field"] = []string{"status", "status", ""}
	form["map_from"] = []string{"approved", "declined", ""}
	form["map_to"] = []string{"1", "3", ""}
	path := fmt.Sprintf("/partners/%d/endpoints", pid)
	res, doc := op.postForm(path, form)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	health, _ := testid(doc, "created-health-link").Attr("href")
	_, doc = op.get(health + "/edit")
	if rows := mapRows(doc); strings.Join(rows, " ") != "status:approved=1 status:declined=3" {
		t.Fatalf("edit form rows: %v", rows)
	}
	if v, _ := doc.Find(`select[name=unmapped] option[selected]`).Attr("value"); v != "skip" {
		t.Fatalf("edit form unmapped %q", v)
	}
	if v, _ := doc.Find(`[name=payout_share]`).Attr("value"); v != "62.5" {
		t.Fatalf("edit form payout_share %q", v)
	}

	// An edit posting the form as shown keeps the rules.
	edit := endpointForm(map[string]string{"name": "affise-2", "url": tmpl, "macro_style": "braces", "unmapped": "skip", "payout_share": "62.5", "enabled": "true"})
	edit["map_field"], edit["map_from"], edit["map_to"] = form["map_field"], form["map_from"], form["map_to"]
	if res, doc := op.postForm(health+"/edit", edit); res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	id := strings.TrimPrefix(health, "/endpoints/")
	rec := env.do(http.MethodGet, "/api/v1/endpoints/"+id, nil)
	if got := decodeBody[endpointJSON](t, rec); got.Name != "affise-2" || got.ValueMaps["status"]["declined"] != "3" || string(got.PayoutShare) != "62.5" {
		t.Fatalf("after the edit: %s %+v", got.Name, got.rulesJSON)
	}

	bad := endpointForm(map[string]string{"name": "bad", "url": tmpl})
	bad["map_field"], bad["map_from"], bad["map_to"] = []string{""}, []string{"approved"}, []string{"1"}
	res, doc = op.postForm(path, bad)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testid(doc, "form-errors").Text(), "Value maps: row 1 has no field") {
		t.Fatalf("row without a field: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
}

// TestEndpointFormPostBody: the form takes a POST postback's body, refuses
// one that is not valid JSON once rendered (next to the field), shows the
// saved one on the edit form, and the test fire sends it with the mapped
// value.
func TestEndpointFormPostBody(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")
	path := fmt.Sprintf("/partners/%d/endpoints", pid)
	tmpl := "https://t.acme.invalid/pb"

	bad := endpointForm(map[string]string{"name": "bad", "url": tmpl, "method": "POST", "body_template": `{"cid": "{click_id}",}`})
	res, doc := op.postForm(path, bad)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testid(doc, "form-errors").Text(), "Body template: body template is not valid JSON") {
		t.Fatalf("invalid body: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	if v := doc.Find(`[name=body_template]`).Text(); !strings.Contains(v, `"cid"`) {
		t.Fatalf("the form does not show the body as typed: %q", v)
	}

	good := endpointForm(map[string]string{"name": "json", "url": tmpl, "method": "POST", "body_template": `{"cid": "{click_id}", "status": "{status}"}`, "body_signature": "webhook"})
	good["map_field"], good["map_from"], good["map_to"] = []string{"status"}, []string{"approved"}, []string{"sale"}
	res, doc = op.postForm(path, good)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	health, _ := testid(doc, "created-health-link").Attr("href")
	_, doc = op.get(health + "/edit")
	if v := doc.Find(`[name=body_template]`).Text(); v != `{"cid": "{click_id}", "status": "{status}"}` {
		t.Fatalf("edit form body %q", v)
	}
	if v, _ := doc.Find(`select[name=body_signature] option[selected]`).Attr("value"); v != "webhook" {
		t.Fatalf("edit form body_signature %q", v)
	}

	_, doc = op.htmx(http.MethodPost, "/endpoints/test-fire", good)
	if got := doc.Text(); !strings.Contains(got, `"status": "sale"`) || !strings.Contains(got, "POST ") {
		t.Fatalf("test fire request: %s", got)
	}
}

// TestDashEventPageShowsSkipped: a delivery the worker skipped for an
// unmapped value (recorded delivered with class unmapped_value) reads as
// skipped on the event page, with why.
func TestDashEventPageShowsSkipped(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "keitaro", "kind": "postback",
		"url": "https://t.acme.invalid/pb?s={status}", "value_maps": map[string]any{"status": map[string]any{"approved": "sale"}}, "unmapped": "skip"})
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"status": "chargeback"}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	del := ev.Deliveries[0].ID
	const why = `value "chargeback" of "status" is not in the endpoint's value map (unmapped: skip)`
	env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, error_class, error)
		VALUES ($1, $2, 1, now(), 0, 'ok', 'unmapped_value', $3)`, del, ev.Deliveries[0].EndpointID, why)
	env.exec(`UPDATE deliveries SET status = 'delivered', attempt_count = 1, delivered_at = now(), last_error_class = 'unmapped_value', last_error = $2 WHERE id = $1`, del, why)

	viewer := env.signIn(env.server(), "viewer@example.com", "viewer")
	_, doc := viewer.get("/events/" + ev.ID)
	d := testid(doc, "delivery")
	if s := strings.TrimSpace(d.Find(`[data-testid=delivery-status]`).First().Text()); s != "skipped" {
		t.Fatalf("delivery status %q, want skipped (%s)", s, d.Text())
	}
	if a := d.Find(`[data-testid=attempt]`); a.AttrOr("data-outcome", "") != "skipped" || !strings.Contains(a.Text(), "not in the endpoint's value map") {
		t.Fatalf("attempt %q (%s)", a.AttrOr("data-outcome", ""), a.Text())
	}
}
