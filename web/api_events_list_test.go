package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

type eventLogPage struct {
	Data []struct {
		ID             string            `json:"id"`
		Type           string            `json:"type"`
		CreatedAt      time.Time         `json:"created_at"`
		IdempotencyKey *string           `json:"idempotency_key"`
		SearchKeys     map[string]string `json:"search_keys"`
		Deliveries     []deliveryRef     `json:"deliveries"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

func (p eventLogPage) ids() []string {
	ids := make([]string, len(p.Data))
	for i, d := range p.Data {
		ids[i] = d.ID
	}
	return ids
}

// listEvents asks GET /api/v1/events with the query and expects a page.
func (e *testEnv) listEvents(query string) eventLogPage {
	e.t.Helper()
	rec := e.do(http.MethodGet, "/api/v1/events?"+query, nil)
	mustStatus(e.t, rec, http.StatusOK)
	return decodeBody[eventLogPage](e.t, rec)
}

// postEventWith posts one event and returns its id.
func (e *testEnv) postEventWith(body map[string]any) string {
	e.t.Helper()
	rec := e.do(http.MethodPost, "/api/v1/events", body)
	mustStatus(e.t, rec, http.StatusAccepted)
	return decodeBody[acceptedBody](e.t, rec).ID
}

func TestAPIEventLogFilters(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	acme := env.createPartner("Acme")
	shop := env.createPartner("Shop")
	hook := env.createEndpoint(map[string]any{"partner_id": acme, "name": "all", "kind": "webhook", "url": "https://hooks.acme.test/in"})
	orders := env.createEndpoint(map[string]any{"partner_id": shop, "name": "orders", "kind": "webhook",
		"url": "https://shop.test/in", "event_types": []string{"order.*"}})

	conv := env.postEventWith(map[string]any{"type": "conversion.approved", "idempotency_key": "conv-8812",
		"payload": map[string]any{"click_id": "9f1c2e", "payout": 12.5}})
	order := env.postEventWith(map[string]any{"type": "order.created", "payload": map[string]any{"order_id": 1042, "cid": "shared-value"}})
	paid := env.postEventWith(map[string]any{"type": "order.paid", "payload": map[string]any{"transaction_id": "shared-value"}})
	// Targeted at Shop but of a type none of its endpoints takes: no
	// delivery, so no partner or endpoint filter finds it.
	targeted := env.postEventWith(map[string]any{"type": "conversion.approved", "partner_id": shop, "payload": map[string]any{"subid": "s-1"}})

	// order: Acme's delivery dead, Shop's delivered; paid: Shop's awaiting
	// retry, Acme's in flight.
	env.exec(`UPDATE deliveries SET status = 'dead', dead_at = now() WHERE event_id = $1 AND endpoint_id = $2`, order, hook.ID)
	env.exec(`UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE event_id = $1 AND endpoint_id = $2`, order, orders.ID)
	env.exec(`UPDATE deliveries SET status = 'failed' WHERE event_id = $1 AND endpoint_id = $2`, paid, orders.ID)
	env.exec(`UPDATE deliveries SET status = 'in_flight', lease_expires_at = now() + interval '1 minute' WHERE event_id = $1 AND endpoint_id = $2`, paid, hook.ID)

	all := []string{targeted, paid, order, conv}
	cases := []struct {
		name  string
		query url.Values
		want  []string
	}{
		{"no filter: newest first", nil, all},
		{"q: event id", url.Values{"q": {order}}, []string{order}},
		{"q: idempotency key", url.Values{"q": {"conv-8812"}}, []string{conv}},
		{"q: click id", url.Values{"q": {"9f1c2e"}}, []string{conv}},
		{"q: numeric order id", url.Values{"q": {"1042"}}, []string{order}},
		{"q: same value under different keys", url.Values{"q": {"shared-value"}}, []string{paid, order}},
		{"q: subid", url.Values{"q": {"s-1"}}, []string{targeted}},
		{"q: exact only", url.Values{"q": {"9f1c"}}, nil},
		{"q: not a search key", url.Values{"q": {"12.5"}}, nil},
		{"type exact", url.Values{"type": {"order.paid"}}, []string{paid}},
		{"type prefix", url.Values{"type": {"order.*"}}, []string{paid, order}},
		{"partner: events with a delivery to its endpoints", url.Values{"partner_id": {fmt.Sprint(shop)}}, []string{paid, order}},
		{"partner and endpoint", url.Values{"partner_id": {fmt.Sprint(shop)}, "endpoint_id": {fmt.Sprint(hook.ID)}}, nil},
		{"type and status", url.Values{"type": {"order.*"}, "status": {"in_flight"}}, []string{paid}},
		{"q and endpoint", url.Values{"q": {"shared-value"}, "endpoint_id": {fmt.Sprint(orders.ID)}}, []string{paid, order}},
		{"q and type", url.Values{"q": {"shared-value"}, "type": {"order.paid"}}, []string{paid}},
		{"partner with status", url.Values{"partner_id": {fmt.Sprint(shop)}, "status": {"delivered"}}, []string{order}},
		{"endpoint", url.Values{"endpoint_id": {fmt.Sprint(orders.ID)}}, []string{paid, order}},
		{"status pending", url.Values{"status": {"pending"}}, []string{conv}},
		{"status awaiting_retry", url.Values{"status": {"awaiting_retry"}}, []string{paid}},
		{"status in_flight", url.Values{"status": {"in_flight"}}, []string{paid}},
		{"status delivered", url.Values{"status": {"delivered"}}, []string{order}},
		{"status dead", url.Values{"status": {"dead"}}, []string{order}},
		{"endpoint and status on the same delivery", url.Values{"endpoint_id": {fmt.Sprint(orders.ID)}, "status": {"dead"}}, nil},
		{"filters combine", url.Values{"q": {"shared-value"}, "status": {"dead"}}, []string{order}},
		{"unknown partner", url.Values{"partner_id": {"999999"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := env.listEvents(tc.query.Encode())
			if got := p.ids(); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("ids = %v, want %v", got, tc.want)
			}
			if p.NextCursor != nil {
				t.Fatalf("next_cursor = %q on the only page", *p.NextCursor)
			}
		})
	}

	t.Run("entry shape", func(t *testing.T) {
		p := env.listEvents("q=conv-8812")
		e := p.Data[0]
		if e.Type != "conversion.approved" || e.IdempotencyKey == nil || *e.IdempotencyKey != "conv-8812" ||
			e.SearchKeys["click_id"] != "9f1c2e" || len(e.SearchKeys) != 1 || e.CreatedAt.IsZero() {
			t.Fatalf("%+v", e)
		}
		if len(e.Deliveries) != 1 || e.Deliveries[0].EndpointID != hook.ID || e.Deliveries[0].Status != "pending" {
			t.Fatalf("deliveries %+v", e.Deliveries)
		}
		p = env.listEvents("q=" + order)
		if p.Data[0].SearchKeys["order_id"] != "1042" || p.Data[0].SearchKeys["cid"] != "shared-value" || len(p.Data[0].Deliveries) != 2 {
			t.Fatalf("%+v", p.Data[0])
		}
		rec := env.do(http.MethodGet, "/api/v1/events?q="+targeted, nil)
		if body := rec.Body.String(); !strings.Contains(body, `"deliveries":[]`) || !strings.Contains(body, `"next_cursor":null`) {
			t.Fatalf("want empty arrays and a null cursor, not omitted fields: %s", body)
		}
	})

	t.Run("time range", func(t *testing.T) {
		env.exec(`UPDATE events SET created_at = now() - interval '2 hours' WHERE id = $1`, conv)
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		if got := env.listEvents("since=" + since).ids(); !slices.Equal(got, []string{targeted, paid, order}) {
			t.Fatalf("since: %v", got)
		}
		if got := env.listEvents("until=" + since).ids(); !slices.Equal(got, []string{conv}) {
			t.Fatalf("until: %v", got)
		}
		q := url.Values{"since": {time.Now().Add(-3 * time.Hour).Format(time.RFC3339Nano)}, "until": {since}}
		if got := env.listEvents(q.Encode()).ids(); !slices.Equal(got, []string{conv}) {
			t.Fatalf("since and until: %v", got)
		}
	})
}

func TestAPIEventLogInvalid(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	cases := []struct{ query, field string }{
		{"limit=abc", "limit"},
		{"limit=0", "limit"},
		{"limit=-5", "limit"},
		{"cursor=not-a-cursor", "cursor"},
		{"cursor=" + encodeCursor(time.Now(), "not-a-uuid"), "cursor"},
		{"cursor=" + url.QueryEscape("bm90fGE="), "cursor"},
		{"since=yesterday", "since"},
		{"until=2026-13-01T00:00:00Z", "until"},
		{"since=2026-05-02T00:00:00Z&until=2026-05-01T00:00:00Z", "until"},
		{"status=failing", "status"},
		{"partner_id=abc", "partner_id"},
		{"endpoint_id=0", "endpoint_id"},
		{"endpoint_id=12abc", "endpoint_id"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			mustError(t, env.do(http.MethodGet, "/api/v1/events?"+tc.query, nil), http.StatusUnprocessableEntity, tc.field)
		})
	}
	t.Run("limit above 500 is capped", func(t *testing.T) {
		env.listEvents("limit=100000")
	})
	t.Run("text PostgreSQL cannot store", func(t *testing.T) {
		mustError(t, env.do(http.MethodGet, "/api/v1/events?q=%00", nil), http.StatusUnprocessableEntity, "q")
	})
	t.Run("needs a key", func(t *testing.T) {
		mustStatus(t, env.do(http.MethodGet, "/api/v1/events", nil, "Authorization", ""), http.StatusUnauthorized)
	})
}

// TestAPIEventLogCursor walks the log a page at a time while new events
// arrive between pages: every event that existed at the start is seen
// exactly once, in order, and none of the newer ones shift a page.
func TestAPIEventLogCursor(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "all", "kind": "webhook", "url": "https://hooks.acme.test/in"})
	var want []string
	// Batches store events with one created_at (one transaction): the id
	// orders them, and page boundaries fall inside batches.
	for b := range 4 {
		var events []any
		for i := range 7 {
			events = append(events, map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": fmt.Sprintf("c-%d-%d", b, i)}})
		}
		rec := env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": events})
		mustStatus(t, rec, http.StatusAccepted)
		for _, r := range decodeBody[struct {
			Results []ingestResult `json:"results"`
		}](t, rec).Results {
			want = append(want, r.ID.String())
		}
		want = append(want, env.postEventWith(map[string]any{"type": "order.created", "payload": map[string]any{"n": b}}))
	}
	// Newest first: the reverse of creation (UUIDv7 ids grow within a batch).
	slices.Reverse(want)

	for _, limit := range []int{1, 5, 8, 32, 33} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []string
			var prev time.Time
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > len(want)+1 {
					t.Fatal("paging does not end")
				}
				p := env.listEvents(fmt.Sprintf("limit=%d&cursor=%s", limit, url.QueryEscape(cursor)))
				if len(p.Data) > limit {
					t.Fatalf("page of %d rows for limit %d", len(p.Data), limit)
				}
				for _, d := range p.Data {
					if !prev.IsZero() && d.CreatedAt.After(prev) {
						t.Fatalf("not newest first: %s after %s", d.CreatedAt, prev)
					}
					prev = d.CreatedAt
				}
				got = append(got, p.ids()...)
				// Newer events arrive between pages.
				env.postEventWith(map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "late"}})
				if p.NextCursor == nil {
					break
				}
				cursor = *p.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Fatalf("walked %d events %v,\nwant %d %v", len(got), got, len(want), want)
			}
		})
		// The next walk starts after the late events: remove them, so
		// every walk checks the same set.
		env.exec(`DELETE FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE search_values @> '{late}')`)
		env.exec(`DELETE FROM events WHERE search_values @> '{late}'`)
	}

	t.Run("filtered pages", func(t *testing.T) {
		var got []string
		cursor := ""
		for {
			p := env.listEvents("type=order.created&limit=3&cursor=" + url.QueryEscape(cursor))
			got = append(got, p.ids()...)
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		if len(got) != 4 {
			t.Fatalf("%d order events: %v", len(got), got)
		}
	})
}

// TestAPIEventLogCursorByDelivery: the log filtered by partner, endpoint or
// status pages through every matching event exactly once, newest first,
// when each event has several matching deliveries (three endpoints of one
// partner, all pending), page boundaries fall inside a batch's tie of
// created_at, and events arrive between pages. A delivery's created_at is
// its event's, which those paths rely on.
func TestAPIEventLogCursorByDelivery(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	var eps []int64
	for i := range 3 {
		eps = append(eps, env.createEndpoint(map[string]any{"partner_id": pid, "name": fmt.Sprint("ep", i), "kind": "webhook", "url": "https://hooks.acme.test/in"}).ID)
	}
	other := env.createPartner("Other")
	env.createEndpoint(map[string]any{"partner_id": other, "name": "else", "kind": "webhook", "url": "https://else.test/in"})
	var want []string
	for b := range 3 {
		var events []any
		for i := range 6 {
			events = append(events, map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": fmt.Sprintf("c-%d-%d", b, i)}})
		}
		rec := env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": events})
		mustStatus(t, rec, http.StatusAccepted)
		for _, r := range decodeBody[struct {
			Results []ingestResult `json:"results"`
		}](t, rec).Results {
			want = append(want, r.ID.String())
		}
	}
	slices.Reverse(want)
	env.waitDB("deliveries carry their event's time", time.Second,
		`SELECT NOT EXISTS (SELECT 1 FROM deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.created_at <> ev.created_at)`)

	for _, filter := range []string{fmt.Sprint("partner_id=", pid), fmt.Sprint("endpoint_id=", eps[1]), "status=pending",
		fmt.Sprintf("partner_id=%d&status=pending&type=conversion.*", pid)} {
		for _, limit := range []int{1, 4, 7} {
			t.Run(fmt.Sprintf("%s limit %d", filter, limit), func(t *testing.T) {
				var got []string
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatal("paging does not end")
					}
					p := env.listEvents(fmt.Sprintf("%s&limit=%d&cursor=%s", filter, limit, url.QueryEscape(cursor)))
					got = append(got, p.ids()...)
					env.postEventWith(map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "late"}})
					if p.NextCursor == nil {
						break
					}
					cursor = *p.NextCursor
				}
				if !slices.Equal(got, want) {
					t.Fatalf("walked %d events %v,\nwant %d %v", len(got), got, len(want), want)
				}
			})
			env.exec(`DELETE FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE search_values @> '{late}')`)
			env.exec(`DELETE FROM events WHERE search_values @> '{late}'`)
		}
	}
}
