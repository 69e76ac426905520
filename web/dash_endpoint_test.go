package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// TestEndpointAttemptLogPages: the attempt log pages back through every
// attempt by keyset links (each attempt on exactly one page, ties in time
// included), shows failures only on request, works as plain links and as
// htmx fragment swaps; the signing secrets come before it on the page.
func TestEndpointAttemptLogPages(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme Retail")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://orders.invalid/in"}).ID
	ctx := context.Background()
	var event string
	if err := env.pool.QueryRow(ctx, "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'order.created', '{}') RETURNING id").Scan(&event); err != nil {
		t.Fatal(err)
	}
	var delivery int64
	if err := env.pool.QueryRow(ctx, "INSERT INTO deliveries (event_id, endpoint_id, max_attempts) VALUES ($1, $2, 200) RETURNING id", event, ep).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	// 120 attempts, two per second (so pages end inside a tie), every
	// third one failed.
	const total = 120
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	failed := 0
	for i := range total {
		outcome, code := "ok", 200
		if i%3 == 0 {
			outcome, code = "transient", 503
			failed++
		}
		if _, err := env.pool.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
			VALUES ($1, $2, $3, $4, 12, $5, $6)`, delivery, ep, i+1, start.Add(time.Duration(i/2)*time.Second), outcome, code); err != nil {
			t.Fatal(err)
		}
	}
	op := env.signIn(base, "ops@example.com", "operator")
	page := fmt.Sprintf("/endpoints/%d", ep)

	numbers := func(doc *goquery.Document) []string {
		var out []string
		doc.Find("[data-testid=attempt-row]").Each(func(_ int, s *goquery.Selection) {
			cell := strings.Fields(s.Find("td").Eq(1).Text())
			out = append(out, cell[len(cell)-1])
		})
		return out
	}
	// walk follows the "older" links from path, as plain page loads, and
	// returns the attempt numbers seen in order.
	walk := func(t *testing.T, path string) []string {
		t.Helper()
		var seen []string
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("more than 10 pages")
			}
			res, doc := op.get(path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, res.StatusCode)
			}
			rows := numbers(doc)
			if len(rows) == 0 || len(rows) > attemptPageSize {
				t.Fatalf("%s: %d rows", path, len(rows))
			}
			seen = append(seen, rows...)
			older, ok := testid(doc, "attempts-older").Attr("href")
			if !ok {
				return seen
			}
			if strings.Contains(older, "offset") || !strings.Contains(older, "before=") {
				t.Fatalf("older link %q is not a keyset link", older)
			}
			path = strings.TrimSuffix(older, "#endpoint-attempts")
		}
	}

	t.Run("every attempt once, newest first", func(t *testing.T) {
		seen := walk(t, page)
		if len(seen) != total {
			t.Fatalf("%d attempts over the pages, want %d", len(seen), total)
		}
		for i, n := range seen {
			if want := fmt.Sprintf("#%d", total-i); n != want {
				t.Fatalf("position %d shows attempt %s, want %s", i, n, want)
			}
		}
	})
	t.Run("failures only", func(t *testing.T) {
		_, doc := op.get(page)
		href, ok := testid(doc, "attempts-failed").Attr("href")
		if !ok {
			t.Fatal("no link to the failures")
		}
		seen := walk(t, strings.TrimSuffix(href, "#endpoint-attempts"))
		if len(seen) != failed {
			t.Fatalf("%d failed attempts listed, want %d", len(seen), failed)
		}
		_, doc = op.get(page + "?attempts=failed")
		doc.Find("[data-testid=attempt-row]").Each(func(_ int, s *goquery.Selection) {
			if o, _ := s.Attr("data-outcome"); o == "ok" {
				t.Fatalf("a successful attempt among the failures")
			}
		})
	})
	t.Run("htmx swaps the log alone", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+page, nil)
		req.Header.Set("HX-Request", "true")
		req.Header.Set("HX-Target", "endpoint-attempts")
		res, err := op.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, doc := op.parse(res)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the htmx request: %d", res.StatusCode)
		}
		if doc.Find("#endpoint-attempts").Length() != 1 || testid(doc, "endpoint-health").Length() != 0 || testid(doc, "topbar").Length() != 0 {
			t.Fatalf("the htmx answer is not the log fragment")
		}
		if n := doc.Find("[data-testid=attempt-row]").Length(); n != attemptPageSize {
			t.Fatalf("%d attempts in the fragment, want a page of %d", n, attemptPageSize)
		}
		link := testid(doc, "attempts-older")
		if link.AttrOr("hx-get", "") == "" || link.AttrOr("hx-target", "") != "#endpoint-attempts" || link.AttrOr("hx-push-url", "") != "true" {
			t.Fatalf("the older link does not swap the log: %v", link.Nodes)
		}
	})
	t.Run("bad cursor", func(t *testing.T) {
		res, _ := op.get(page + "?before=yesterday")
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("a bad cursor: %d, want 422", res.StatusCode)
		}
	})
	t.Run("status code and time range, kept while paging, each attempt linked to its event", func(t *testing.T) {
		// Five old attempts answered 500, three days back.
		for i := range 5 {
			if _, err := env.pool.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
				VALUES ($1, $2, $3, now() - interval '3 days' + $4 * interval '1 second', 12, 'transient', 500)`, delivery, ep, 1000+i, i); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { env.exec("DELETE FROM delivery_attempts WHERE attempt_no >= 1000") })
		_, doc := op.get(page + "?status_code=500")
		if got := numbers(doc); len(got) != 5 || got[0] != "#1004" {
			t.Fatalf("status 500 shows %v, want the five old attempts", got)
		}
		_, doc = op.get(page + "?status_code=500&window=24h")
		if n := doc.Find("[data-testid=attempt-row]").Length(); n != 0 {
			t.Fatalf("status 500 in the last 24 h shows %d attempts, want none", n)
		}
		if testid(doc, "attempt-filter-clear").Length() != 1 {
			t.Fatal("no way to clear the filter")
		}
		seen := walk(t, page+"?status_code=503&window=24h")
		if len(seen) != failed {
			t.Fatalf("503s in the last 24 h over the pages: %d, want %d", len(seen), failed)
		}
		_, doc = op.get(page + "?status_code=200") // 80 attempts: two pages
		older, _ := testid(doc, "attempts-older").Attr("href")
		if !strings.Contains(older, "status_code=200") {
			t.Fatalf("the older link %q drops the filter", older)
		}
		href, _ := doc.Find("[data-testid=attempt-event]").First().Attr("href")
		if want := fmt.Sprintf("/events/%s#delivery-%d", event, delivery); href != want {
			t.Fatalf("the attempt links to %q, want %q", href, want)
		}
		res, evdoc := op.get(strings.Split(href, "#")[0])
		if res.StatusCode != http.StatusOK || evdoc.Find(fmt.Sprintf("#delivery-%d", delivery)).Length() != 1 {
			t.Fatalf("the event page (%d) has no section for delivery %d", res.StatusCode, delivery)
		}
		if l, _ := testid(doc, "attempts-event-log").Attr("href"); l != fmt.Sprintf("/events?endpoint_id=%d", ep) {
			t.Fatalf("the event log link is %q", l)
		}
		for _, bad := range []string{"?status_code=99", "?status_code=abc", "?window=2d"} {
			if res, _ := op.get(page + bad); res.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%s: %d, want 422", bad, res.StatusCode)
			}
		}
	})
	t.Run("secrets before the attempt log", func(t *testing.T) {
		_, doc := op.get(page)
		html, _ := doc.Html()
		secrets, attempts := strings.Index(html, `data-testid="secrets"`), strings.Index(html, `data-testid="attempt-log"`)
		if secrets < 0 || attempts < 0 || secrets > attempts {
			t.Fatalf("the secrets panel (at %d) is not before the attempt log (at %d)", secrets, attempts)
		}
		if testid(doc, "page-nav").Find(`a[href="#endpoint-secrets"]`).Length() != 1 {
			t.Fatal("the page's navigation does not link to the secrets")
		}
	})
}
