package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
)

// TestDashEventsSearchFilterPaging: the event log finds an event by the
// click id in its payload and by its idempotency key, filters by type and
// delivery status, and pages newest first with the "Older" link, no event
// missed or repeated.
func TestDashEventsSearchFilterPaging(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders-hook", "kind": "webhook", "url": "http://127.0.0.1:1/in"})
	other := env.createPartner("Clickwave")
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "idempotency_key": "conv-77",
		"payload": map[string]any{"click_id": "9f1c2e", "payout": 3}})
	mustStatus(t, rec, http.StatusAccepted)
	target := decodeBody[acceptedBody](t, rec).ID
	batch := make([]map[string]any, 51)
	for i := range batch {
		batch[i] = map[string]any{"type": "order.created", "payload": map[string]any{"order_id": i}}
	}
	mustStatus(t, env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": batch}), http.StatusAccepted)

	base := env.server()
	b := env.signIn(base, "viewer@example.com", "viewer")

	res, doc := b.get("/events?q=9f1c2e")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("search: %d", res.StatusCode)
	}
	if doc.Find(`nav a[href="/events"]`).Length() == 0 {
		t.Error("no Events link in the navigation")
	}
	rows := testid(doc, "event-row")
	if rows.Length() != 1 || rows.AttrOr("data-event-id", "") != target {
		t.Fatalf("search by click id: %d rows (%q), want the event %s", rows.Length(), rows.AttrOr("data-event-id", ""), target)
	}
	if keys := rows.Find(`[data-testid="search-keys"]`).Text(); !strings.Contains(keys, "click_id") || !strings.Contains(keys, "9f1c2e") {
		t.Errorf("search keys %q", keys)
	}
	chip := rows.Find(`[data-testid="delivery-chip"]`)
	if chip.Length() != 1 || !strings.Contains(chip.Text(), "orders-hook") || chip.AttrOr("data-status", "") != "pending" {
		t.Errorf("delivery chip %q status %q", chip.Text(), chip.AttrOr("data-status", ""))
	}
	if v, _ := doc.Find(`form[data-testid=events-search] input[name=q]`).Attr("value"); v != "9f1c2e" {
		t.Errorf("search box keeps %q", v)
	}

	_, doc = b.get("/events?q=conv-77")
	if rows := testid(doc, "event-row"); rows.Length() != 1 || rows.AttrOr("data-event-id", "") != target {
		t.Errorf("search by idempotency key: %d rows", rows.Length())
	}
	_, doc = b.get("/events?q=" + target)
	if rows := testid(doc, "event-row"); rows.Length() != 1 {
		t.Errorf("search by event id: %d rows", rows.Length())
	}
	_, doc = b.get("/events?q=9f1c2")
	if n := testid(doc, "event-row").Length(); n != 0 || testid(doc, "events-empty").Length() != 1 {
		t.Errorf("a partial click id matched %d rows; the search is exact", n)
	}

	_, doc = b.get("/events?type=conversion.approved")
	if rows := testid(doc, "event-row"); rows.Length() != 1 || rows.AttrOr("data-event-id", "") != target {
		t.Errorf("type filter: %d rows", rows.Length())
	}
	_, doc = b.get("/events?status=delivered")
	if n := testid(doc, "event-row").Length(); n != 0 {
		t.Errorf("status=delivered: %d rows, want none (nothing was sent)", n)
	}
	_, doc = b.get("/events?status=pending&type=order.*")
	if n := testid(doc, "event-row").Length(); n != 50 {
		t.Errorf("status=pending&type=order.*: %d rows, want a full page of 50", n)
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{fmt.Sprintf("endpoint_id=%d&q=9f1c2e", ep.ID), 1},
		{fmt.Sprintf("partner_id=%d", pid), 50},
		{fmt.Sprintf("partner_id=%d", other), 0},
		{"since=2099-01-01T00:00", 0},
		{"until=2000-01-01T00:00", 0},
		{"since=2000-01-01T00:00&q=conv-77", 1},
	} {
		_, doc = b.get("/events?" + c.query)
		if n := testid(doc, "event-row").Length(); n != c.want {
			t.Errorf("%s: %d rows, want %d", c.query, n, c.want)
		}
	}
	if res, _ := b.get("/events?status=bogus"); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unknown status: %d, want 422", res.StatusCode)
	}

	seen := map[string]bool{}
	_, doc = b.get("/events")
	first := testid(doc, "event-row")
	if first.Length() != 50 || first.First().AttrOr("data-event-id", "") == target {
		t.Fatalf("first page: %d rows, newest first", first.Length())
	}
	first.Each(func(_ int, s *goquery.Selection) { seen[s.AttrOr("data-event-id", "")] = true })
	older, ok := testid(doc, "events-older").Attr("href")
	if !ok {
		t.Fatal("no Older link on a full page")
	}
	_, doc = b.get(older)
	second := testid(doc, "event-row")
	if testid(doc, "new-events").Length() != 0 {
		t.Error("an older page polls for new events")
	}
	if second.Length() != 2 || testid(doc, "events-older").Length() != 0 {
		t.Fatalf("second page: %d rows, older link %d", second.Length(), testid(doc, "events-older").Length())
	}
	second.Each(func(_ int, s *goquery.Selection) {
		id := s.AttrOr("data-event-id", "")
		if seen[id] {
			t.Errorf("event %s on both pages", id)
		}
		seen[id] = true
	})
	if len(seen) != 52 || !seen[target] {
		t.Errorf("paged through %d events, want 52 with the oldest", len(seen))
	}
}

// TestDashEventPageRequest: the event page shows the payload, the delivery
// and the request hookline sends with custom header values masked, the
// signature header present and no secret; a viewer gets no resend button
// and a forged resend is refused; an operator's resend of a delivery in
// flight says so.
func TestDashEventPageRequest(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders-hook", "kind": "webhook", "url": "http://127.0.0.1:1/in",
		"headers": map[string]string{"X-Account": "acct-42"}})
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "9f1c2e"}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	del := ev.Deliveries[0].ID

	base := env.server()
	viewer := env.signIn(base, "viewer@example.com", "viewer")
	res, doc := viewer.get("/events/" + ev.ID)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("event page: %d", res.StatusCode)
	}
	if body, _ := doc.Html(); strings.Contains(body, "whsec_") || strings.Contains(body, "acct-42") {
		t.Error("the event page shows a secret or a custom header value")
	}
	if p := testid(doc, "payload"); !strings.Contains(p.Text(), `"click_id": "9f1c2e"`) || goquery.NodeName(p) != "details" {
		t.Errorf("payload %q", p.Text())
	}
	d := testid(doc, "delivery")
	if d.Length() != 1 || !strings.Contains(d.Text(), "orders-hook") || !strings.Contains(d.Text(), "Acme") || d.Find(`[data-testid="next-attempt"]`).Length() != 1 {
		t.Fatalf("delivery %q", d.Text())
	}
	req := d.Find(`[data-testid="request-text"]`).Text()
	for _, want := range []string{"POST http://127.0.0.1:1/in", "X-Account: ********", "Webhook-Signature: v1,", "Webhook-Id: " + ev.ID, `"click_id":"9f1c2e"`} {
		if !strings.Contains(req, want) {
			t.Errorf("request lacks %q:\n%s", want, req)
		}
	}
	if curl := d.Find(`[data-testid="copybox-value"]`).Text(); !strings.HasPrefix(curl, "curl -X POST 'http://127.0.0.1:1/in'") || !strings.Contains(curl, "X-Account: ********") {
		t.Errorf("curl %q", curl)
	}
	if testid(doc, "resend").Length() != 0 {
		t.Error("a viewer sees a resend button")
	}
	res, _ = viewer.postForm(fmt.Sprintf("/deliveries/%d/resend", del), url.Values{})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's forged resend: %d, want 403", res.StatusCode)
	}
	env.waitDB("no resend by the viewer", time.Second, `SELECT replay_count = 0 AND NOT EXISTS (SELECT 1 FROM audit_log WHERE action = 'delivery.resend') FROM deliveries WHERE id = $1`, del)

	op := env.signIn(base, "op@example.com", "operator")
	_, doc = op.get("/events/" + ev.ID)
	action, ok := testid(doc, "resend-form").Attr("action")
	if !ok {
		t.Fatal("an operator sees no resend form")
	}
	env.exec(`UPDATE deliveries SET status = 'in_flight', lease_expires_at = now() + interval '1 hour' WHERE id = $1`, del)
	res, doc = op.postForm(action, url.Values{})
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/events/"+ev.ID || !strings.Contains(testid(doc, "flashes").Text(), "being sent right now") {
		t.Errorf("resend in flight: %d at %s, flash %q", res.StatusCode, res.Request.URL.Path, testid(doc, "flashes").Text())
	}
	env.exec(`UPDATE deliveries SET status = 'pending', lease_expires_at = NULL WHERE id = $1`, del)
	res, doc = op.postForm(action, url.Values{})
	if res.StatusCode != http.StatusOK || !strings.Contains(testid(doc, "flashes").Text(), "queued again") {
		t.Errorf("resend: %d, flash %q", res.StatusCode, testid(doc, "flashes").Text())
	}
	env.waitDB("the resend audited", time.Second, `SELECT replay_count = 1 AND EXISTS (SELECT 1 FROM audit_log WHERE action = 'delivery.resend' AND actor = 'user:op@example.com') FROM deliveries WHERE id = $1`, del)
}

// TestDashEventNotFound: an unknown or malformed event id is a 404 page
// that offers the search box.
func TestDashEventNotFound(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := env.signIn(env.server(), "viewer@example.com", "viewer")
	for _, id := range []string{uuid.NewString(), "9f1c2e"} {
		res, doc := b.get("/events/" + id)
		if res.StatusCode != http.StatusNotFound || testid(doc, "event-not-found").Length() != 1 {
			t.Errorf("%s: %d", id, res.StatusCode)
		}
		if v, ok := doc.Find(`form[data-testid=events-search][action="/events"] input[name=q]`).Attr("value"); !ok || v != id {
			t.Errorf("%s: search box %q", id, v)
		}
	}
}

// TestDashEventResendReachesReceiver: an operator's resend from the event
// page reaches the receiver again with the same webhook-id.
func TestDashEventResendReachesReceiver(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	rcv := newHookReceiver(t, http.StatusOK, 0, "ok")
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": rcv.URL + "/in"})
	env.startWorker()
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "9f1c2e"}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	del := ev.Deliveries[0].ID
	env.waitDB("first delivery", 15*time.Second, `SELECT status = 'delivered' FROM deliveries WHERE id = $1`, del)

	op := env.signIn(env.server(), "op@example.com", "operator")
	_, doc := op.get("/events?q=9f1c2e")
	href, ok := testid(doc, "event-row").Find("a").Attr("href")
	if !ok {
		t.Fatal("the search found no event to open")
	}
	_, doc = op.get(href)
	if n := testid(doc, "attempt").Length(); n != 1 {
		t.Errorf("%d attempts shown, want 1", n)
	}
	action, ok := testid(doc, "resend-form").Attr("action")
	if !ok {
		t.Fatal("no resend form")
	}
	if res, _ := op.postForm(action, url.Values{}); res.StatusCode != http.StatusOK {
		t.Fatalf("resend: %d", res.StatusCode)
	}
	env.waitDB("the resend delivered", 15*time.Second, `SELECT status = 'delivered' AND attempt_count = 2 FROM deliveries WHERE id = $1`, del)
	got := rcv.requests()
	if len(got) != 2 || got[0].WebhookID != ev.ID || got[1].WebhookID != ev.ID {
		t.Fatalf("receiver got %d requests (%+v), want 2 with webhook-id %s", len(got), got, ev.ID)
	}
	_, doc = op.get(href)
	if n := testid(doc, "attempt").Length(); n != 2 {
		t.Errorf("%d attempts shown after the resend, want 2", n)
	}
}

// TestDashEventsNewAnnounced: the first page polls for newer events with
// its filters and announces them rather than shifting the list; older pages
// do not poll.
func TestDashEventsNewAnnounced(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.postEvent("order.created", map[string]any{"order_id": 1})
	b := env.signIn(env.server(), "viewer@example.com", "viewer")
	_, doc := b.get("/events?type=order.*")
	poll, ok := testid(doc, "new-events").Attr("hx-get")
	if !ok || testid(doc, "new-events").AttrOr("data-count", "") != "0" {
		t.Fatal("the first page does not poll for new events")
	}
	_, doc = b.get(poll)
	if n := testid(doc, "new-events").AttrOr("data-count", ""); n != "0" {
		t.Fatalf("new events before any arrived: %s", n)
	}
	env.postEvent("order.created", map[string]any{"order_id": 2})
	env.postEvent("order.created", map[string]any{"order_id": 3})
	env.postEvent("refund.created", map[string]any{"order_id": 4}) // not of the filtered type
	_, doc = b.get(poll)
	ann := testid(doc, "new-events")
	if ann.AttrOr("data-count", "") != "2" || !strings.Contains(ann.Text(), "2 new events") {
		t.Fatalf("announcement %q (count %s), want 2 new events", ann.Text(), ann.AttrOr("data-count", ""))
	}
	if href, _ := ann.Find("a").Attr("href"); href != "/events?type=order.%2A" {
		t.Errorf("show link %q keeps the filters", href)
	}
	if next, _ := ann.Attr("hx-get"); next != poll {
		t.Errorf("the announcement polls %q, want %q", next, poll)
	}
	if res, _ := b.get("/events/new?after=yesterday"); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bad after: %d", res.StatusCode)
	}
}

// TestDashEventPagePostback: a postback delivery's request is the GET to
// the rendered template, redacted as logs redact URLs, and unsigned.
func TestDashEventPagePostback(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	pid := env.createPartner("Clickwave")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "keitaro", "kind": "postback", "method": "GET",
		"url": "http://127.0.0.1:1/postback?subid={click_id}&payout={payout}"})
	id := env.postEvent("conversion.approved", map[string]any{"click_id": "9f1c2e77", "payout": 2.5})
	b := env.signIn(env.server(), "viewer@example.com", "viewer")
	_, doc := b.get("/events/" + id)
	req := testid(doc, "request-text").Text()
	if !strings.HasPrefix(req, "GET http://127.0.0.1:1/postback?") || strings.Contains(req, "Webhook-Signature") || strings.Contains(req, "9f1c2e77") {
		t.Errorf("postback request:\n%s", req)
	}
	if curl := testid(doc, "copybox-value").Text(); !strings.HasPrefix(curl, "curl 'http://127.0.0.1:1/postback?") {
		t.Errorf("curl %q", curl)
	}
}

// TestDashEventPageFiltered: an endpoint whose payload filter kept an
// event from it is named on the event's page as filtered; one that took
// the event, or does not take its type, is not.
func TestDashEventPageFiltered(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	strict := env.createEndpoint(map[string]any{"partner_id": pid, "name": "big payouts", "kind": "webhook",
		"url": "https://big.acme.invalid/in", "filter": map[string]any{"payout": map[string]any{"$gte": 100}}})
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "everything", "kind": "webhook", "url": "https://all.acme.invalid/in"})
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders only", "kind": "webhook", "url": "https://orders.acme.invalid/in",
		"event_types": []string{"order.*"}, "filter": map[string]any{"payout": map[string]any{"$gte": 100}}})
	post := func(payout int) string {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"payout": payout}})
		mustStatus(t, rec, http.StatusAccepted)
		return decodeBody[acceptedBody](t, rec).ID
	}
	small, big := post(5), post(500)
	viewer := env.signIn(env.server(), "viewer@example.com", "viewer")

	_, doc := viewer.get("/events/" + small)
	items := doc.Find("[data-testid=filtered-endpoint]")
	if items.Length() != 1 || items.AttrOr("data-endpoint-id", "") != fmt.Sprint(strict.ID) || !strings.Contains(items.Text(), "filtered") {
		t.Fatalf("filtered endpoints on the small event: %q", items.Text())
	}
	if n := testid(doc, "delivery").Length(); n != 1 {
		t.Fatalf("%d deliveries on the small event, want 1", n)
	}
	_, doc = viewer.get("/events/" + big)
	if n := testid(doc, "filtered").Length(); n != 0 {
		t.Fatal("the event every filter passed shows a filtered section")
	}
	if n := testid(doc, "delivery").Length(); n != 2 {
		t.Fatalf("%d deliveries on the big event, want 2", n)
	}
}
