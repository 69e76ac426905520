package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/hookline/hookline/views/events"
)

// TestDashLinksIntoEventLog: the overview's dead-letter tile, a dead-letter
// cluster and an expanded cluster's deliveries open the event log (or the
// event) at the dead delivery they count.
func TestDashLinksIntoEventLog(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://orders.acme.invalid/in"}).ID
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "audit", "kind": "webhook", "url": "https://audit.acme.invalid/in"})
	post := func(click string) acceptedBody {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": click}})
		mustStatus(t, rec, http.StatusAccepted)
		return decodeBody[acceptedBody](t, rec)
	}
	dead := post("c-dead")
	post("c-alive")
	var deadDelivery int64
	for _, d := range dead.Deliveries {
		if d.EndpointID == ep {
			deadDelivery = d.ID
		}
	}
	env.exec(`UPDATE deliveries SET status = 'dead', dead_at = now(), attempt_count = 5, last_error = 'HTTP 503',
		last_error_class = 'http_5xx', last_status_code = 503 WHERE id = $1`, deadDelivery)
	op := env.signIn(env.server(), "ops@example.com", "operator")

	// follow opens a link and returns the event ids the log lists.
	follow := func(href string) []string {
		t.Helper()
		if !strings.HasPrefix(href, "/events?") {
			t.Fatalf("link %q does not open the event log", href)
		}
		res, doc := op.get(href)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", href, res.StatusCode)
		}
		var ids []string
		doc.Find("[data-testid=event-row]").Each(func(_ int, s *goquery.Selection) {
			ids = append(ids, s.AttrOr("data-event-id", ""))
		})
		return ids
	}

	_, doc := op.get("/")
	href, _ := doc.Find("#tile-dead").Attr("href")
	u, _ := url.Parse(href)
	if u.Query().Get("status") != "dead" || u.Query().Get("since") == "" {
		t.Fatalf("the dead-letter tile links to %q, want the log filtered to dead, last hour", href)
	}
	if ids := follow(href); len(ids) != 1 || ids[0] != dead.ID {
		t.Fatalf("the dead-letter tile's log lists %v, want only %s", ids, dead.ID)
	}
	for tile, status := range map[string]string{"#tile-pending": "pending", "#tile-retry": "awaiting_retry"} {
		if href, _ := doc.Find(tile).Attr("href"); href != "/events?status="+status {
			t.Errorf("%s links to %q", tile, href)
		}
	}
	// In flight is what the workers hold, which no status in the table
	// shows (claims write nothing): the tile links nowhere.
	if href, ok := doc.Find("#tile-in-flight").Attr("href"); ok {
		t.Errorf("the in-flight tile links to %q", href)
	}
	if ids := follow(doc.Find("#tile-pending").AttrOr("href", "")); len(ids) != 2 {
		t.Errorf("the pending tile's log lists %v, want both events (each has a pending delivery)", ids)
	}

	_, doc = op.get("/dead-letters")
	href = testid(doc, "cluster-events").AttrOr("href", "")
	if ids := follow(href); len(ids) != 1 || ids[0] != dead.ID {
		t.Fatalf("the cluster's log %q lists %v, want only %s", href, ids, dead.ID)
	}
	if !strings.Contains(href, fmt.Sprintf("endpoint_id=%d", ep)) {
		t.Fatalf("the cluster's link %q is not filtered to its endpoint", href)
	}
	_, doc = op.get(testid(doc, "cluster-expand").AttrOr("hx-get", ""))
	if link := testid(doc, "dead-delivery-event").AttrOr("href", ""); link != fmt.Sprintf("/events/%s#delivery-%d", dead.ID, deadDelivery) {
		t.Fatalf("an expanded cluster's delivery links to %q", link)
	}
}

// TestAlertLinksIntoEventLog: a dead-letter alert's endpoints open the log
// at their dead deliveries of the last hour; a late-delivery alert links to
// the waiting events; a slow endpoint still opens its page.
func TestAlertLinksIntoEventLog(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 30, 40, 0, time.UTC)
	v := alertView(alert{Kind: "dead_letters_rising", Endpoints: []alertEndpoint{{ID: 7, Name: "orders", Dead: 3}}}, now)
	want := events.Filter{EndpointID: 7, Status: "dead", Since: "2026-05-01T11:30"}.URL()
	if got := v.Links[len(v.Links)-1].Href; got != want {
		t.Errorf("dead-letter alert endpoint links to %q, want %q", got, want)
	}
	v = alertView(alert{Kind: "oldest_pending"}, now)
	if got := v.Links[len(v.Links)-1].Href; got != "/events?status=pending" {
		t.Errorf("late-delivery alert links to %q", got)
	}
	v = alertView(alert{Kind: "slow_endpoints", Endpoints: []alertEndpoint{{ID: 9, Name: "slow"}}}, now)
	if got := v.Links[len(v.Links)-1].Href; got != "/endpoints/9" {
		t.Errorf("slow endpoint links to %q", got)
	}
}
