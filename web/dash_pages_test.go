package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/hookline/hookline/views/deadletters"
)

func TestEndpointsPage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	fast := env.createEndpoint(map[string]any{"partner_id": pid, "name": "fast", "kind": "webhook", "url": "https://fast.example/"}).ID
	slow := env.createEndpoint(map[string]any{"partner_id": pid, "name": "slow", "kind": "postback", "url": "https://t.example/pb?cid={click_id}"}).ID
	// Cached health as the worker leaves it: a sparkline for both, slow's
	// breaker open and its recent P95 critical.
	spark := func(ms float32) string {
		vals := make([]string, 96)
		for i := range vals {
			vals[i] = fmt.Sprint(ms)
		}
		return "{" + strings.Join(vals, ",") + "}"
	}
	counts := "{" + strings.Repeat("5,", 95) + "5}"
	env.exec(`INSERT INTO endpoint_sparklines (endpoint_id, start, p50, p95, p99, counts)
		VALUES ($1, now() - interval '24 hours', $2, $2, $2, $3), ($4, now() - interval '24 hours', $5, $5, $5, $3)`, fast, spark(80), counts, slow, spark(900))
	env.exec(`UPDATE endpoint_health SET p50_ms = 40, p95_ms = 80, p99_ms = 120, sample_count = 480, ok_count = 470 WHERE endpoint_id = $1`, fast)
	env.exec(`UPDATE endpoint_health SET p95_ms = 900, sample_count = 480, ok_count = 400, recent_p95_ms = 6100, recent_sample_count = 30,
		state = 'open', opened_at = now(), consecutive_failures = 10 WHERE endpoint_id = $1`, slow)
	b := env.signIn(base, "v@example.com", "viewer")
	_, doc := b.get("/endpoints")
	rows := testid(doc, "endpoint-row")
	if rows.Length() != 2 {
		t.Fatalf("%d rows", rows.Length())
	}
	row := func(id int64) string { return fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"]`, id) }
	if n := doc.Find(row(fast) + ` [data-testid=sparkline]`).Length(); n != 3 {
		t.Fatalf("fast has %d sparklines, want 3 (P50, P95, P99)", n)
	}
	if title := doc.Find(row(fast) + ` [data-testid=sparkline] title`).First().Text(); !strings.Contains(title, "ms") {
		t.Fatalf("sparkline title %q", title)
	}
	if s, _ := doc.Find(row(fast) + ` [data-testid=breaker-badge]`).Attr("data-state"); s != "closed" {
		t.Fatalf("fast breaker %q", s)
	}
	if s, _ := doc.Find(row(slow) + ` [data-testid=breaker-badge]`).Attr("data-state"); s != "open" {
		t.Fatalf("slow breaker %q", s)
	}
	if !strings.Contains(doc.Find(row(slow)).Text(), "critical") {
		t.Fatal("slow endpoint not flagged critical")
	}
	if strings.Contains(doc.Find(row(slow)).Text(), "cid=") {
		t.Fatal("the table shows a postback's query")
	}
	t.Run("filter and sort", func(t *testing.T) {
		_, doc := b.get("/endpoints/table?show=open")
		if testid(doc, "endpoint-row").Length() != 1 {
			t.Fatal("open filter")
		}
		_, doc = b.get("/endpoints/table?sort=p95")
		if id, _ := testid(doc, "endpoint-row").First().Attr("data-endpoint-id"); id != fmt.Sprint(slow) {
			t.Fatal("sort by P95 does not put the slow endpoint first")
		}
		_, doc = b.get("/endpoints/table?q=fas")
		if testid(doc, "endpoint-row").Length() != 1 {
			t.Fatal("search")
		}
	})
}

func TestEndpointPageActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	base := env.server()
	var got http.Header
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		io.WriteString(w, "ok")
	}))
	defer rcv.Close()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": rcv.URL + "/in"})
	op := env.signIn(base, "op@example.com", "operator")
	path := fmt.Sprintf("/endpoints/%d", ep.ID)
	_, doc := op.get(path)
	if testid(doc, "endpoint-health").Length() != 1 || testid(doc, "secret-row").Length() != 1 || testid(doc, "test-fire-button").Length() != 1 {
		t.Fatal("endpoint page is missing panels")
	}
	t.Run("test fire", func(t *testing.T) {
		_, doc := op.htmx(http.MethodPost, path+"/test", url.Values{})
		if !strings.Contains(testid(doc, "test-result-view").Text(), "200") || testid(doc, "test-latency").Text() == "" {
			t.Fatalf("test fire result: %s", doc.Text())
		}
		if !strings.Contains(testid(doc, "ssrf-verdict").Text(), "127.0.0.1") || !strings.Contains(testid(doc, "ssrf-verdict").Text(), "allowed") {
			t.Fatalf("verdict: %s", testid(doc, "ssrf-verdict").Text())
		}
		if got.Get("webhook-signature") == "" {
			t.Fatal("test fire not signed")
		}
	})
	t.Run("rotate shows the secret once", func(t *testing.T) {
		_, doc := op.htmx(http.MethodPost, path+"/rotate", url.Values{"overlap": {"3600"}})
		secret := testid(doc, "new-secret").Find("code, pre, input").Text()
		if secret == "" {
			v, _ := testid(doc, "new-secret").Find("input").Attr("value")
			secret = v
		}
		if !strings.Contains(testid(doc, "new-secret").Text()+secret, "whsec_") {
			t.Fatalf("no new secret shown: %s", testid(doc, "new-secret").Text())
		}
		if testid(doc, "secret-row").Length() != 2 {
			t.Fatal("two secrets expected during the overlap")
		}
		_, doc = op.get(path)
		if strings.Contains(doc.Text(), "whsec_") {
			t.Fatal("the secret is shown again on reload")
		}
	})
	t.Run("pause and resume", func(t *testing.T) {
		_, doc := op.htmx(http.MethodPost, path+"/pause", url.Values{})
		if s, _ := testid(doc, "breaker-badge").Attr("data-state"); s != "paused" {
			t.Fatalf("after pause: %q", s)
		}
		_, doc = op.htmx(http.MethodPost, path+"/resume", url.Values{})
		if s, _ := testid(doc, "breaker-badge").Attr("data-state"); s != "closed" {
			t.Fatalf("after resume: %q", s)
		}
	})
	_, doc = op.get("/audit")
	actions := map[string]bool{}
	doc.Find(`[data-testid=audit-row]`).Each(func(_ int, s *goquery.Selection) { a, _ := s.Attr("data-action"); actions[a] = true })
	for _, a := range []string{"endpoint.test_fire", "endpoint.rotate_secret", "endpoint.pause", "endpoint.resume", "endpoint.create"} {
		if !actions[a] {
			t.Errorf("audit log lacks %s", a)
		}
	}
}

// deadLetterCluster seeds one cluster of three dead letters (401s, a
// credentials pattern) and signs an operator in: it returns the operator's
// first look at the dead letters page.
func deadLetterCluster(t *testing.T) (*testEnv, *browser, endpointJSON, *goquery.Document) {
	t.Helper()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "crm", "kind": "webhook", "url": "https://crm.example/"})
	env.seedDead(ep.ID, "http_status", 401, "5", times(time.Now().Add(-time.Hour), 3, time.Minute)...)
	op := env.signIn(base, "op@example.com", "operator")
	_, doc := op.get("/dead-letters")
	return env, op, ep, doc
}

func TestDeadLettersPageReplay(t *testing.T) {
	t.Parallel()
	env, op, ep, doc := deadLetterCluster(t)
	row := testid(doc, "cluster-row")
	if p, _ := row.Attr("data-pattern"); p != "credentials" || testid(doc, "cluster-count").Text() != "3" {
		t.Fatalf("cluster %q %q", p, testid(doc, "cluster-count").Text())
	}
	key, _ := row.Attr("data-cluster")
	_, doc = op.get("/dead-letters/cluster?key=" + url.QueryEscape(key) + "&hours=24")
	if testid(doc, "dead-delivery").Length() != 3 {
		t.Fatal("expanding the cluster")
	}
	_, doc = op.htmx(http.MethodPost, "/dead-letters/replay", url.Values{"cluster": {key}, "hours": {"24"}})
	if testid(doc, "replay-requeued").Text() != "3 re-queued" {
		t.Fatalf("replay answer: %s", doc.Text())
	}
	next, _ := testid(doc, "replay-progress").Attr("hx-get")
	// The worker delivers them (simulated here): the progress follows.
	env.exec("UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE endpoint_id = $1", ep.ID)
	_, doc = op.get(next)
	if w, _ := testid(doc, "replay-progress").Attr("data-waiting"); w != "0" || testid(doc, "replay-delivered").Text() != "3 delivered" {
		t.Fatalf("progress: %s", doc.Text())
	}
	if _, ok := testid(doc, "replay-progress").Attr("hx-get"); ok {
		t.Fatal("progress keeps polling after everything is delivered")
	}
}

// TestDeadLetterCountFollowsReplay: a cluster replay's answer, and each of
// its progress polls, carry the cluster row's current count as an
// out-of-band swap: re-queued dead letters leave the cluster, those that die
// again with the same error come back.
func TestDeadLetterCountFollowsReplay(t *testing.T) {
	t.Parallel()
	env, op, ep, doc := deadLetterCluster(t)
	key, _ := testid(doc, "cluster-row").Attr("data-cluster")
	countID, _ := testid(doc, "cluster-count").Find("span").Attr("id")
	if countID != deadletters.CountID(key) {
		t.Fatalf("the count cell holds no element with id %q: %q", deadletters.CountID(key), countID)
	}
	oob := func(doc *goquery.Document) string {
		t.Helper()
		u := testid(doc, "cluster-count-update")
		if id, _ := u.Attr("id"); id != countID || u.AttrOr("hx-swap-oob", "") != "true" {
			t.Fatalf("no out-of-band count for %q in: %s", countID, doc.Text())
		}
		return u.Text()
	}

	_, doc = op.htmx(http.MethodPost, "/dead-letters/replay", url.Values{"cluster": {key}, "hours": {"24"}})
	if got := oob(doc); got != "0" {
		t.Fatalf("count right after the replay %q, want 0: all three were re-queued", got)
	}
	next, _ := testid(doc, "replay-progress").Attr("hx-get")
	// Two are delivered; one dies again with the same error.
	ctx := context.Background()
	if _, err := env.pool.Exec(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = now()
		WHERE id IN (SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 2)`, ep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.pool.Exec(ctx, `UPDATE deliveries SET status = 'dead', dead_at = now()
		WHERE endpoint_id = $1 AND status = 'pending'`, ep.ID); err != nil {
		t.Fatal(err)
	}
	_, doc = op.get(next)
	if got := oob(doc); got != "1" {
		t.Fatalf("count after one died again %q, want 1", got)
	}

	// An endpoint-wide replay has no cluster row to follow.
	_, doc = op.htmx(http.MethodPost, "/dead-letters/replay", url.Values{"endpoint_id": {fmt.Sprint(ep.ID)}})
	if testid(doc, "cluster-count-update").Length() != 0 {
		t.Fatal("an endpoint replay answered with a cluster count")
	}
}

func TestOverviewPage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	b := env.signIn(base, "v@example.com", "viewer")
	_, doc := b.get("/")
	if testid(doc, "tile").Length() != 8 || testid(doc, "empty-state").Length() != 1 {
		t.Fatalf("quiet overview: %d tiles", testid(doc, "tile").Length())
	}
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "x", "kind": "webhook", "url": "https://x.example/"})
	env.seedDead(ep.ID, "http_status", 500, "", time.Now().Add(-time.Minute))
	_, doc = b.get("/overview/live")
	if testid(doc, "alert").Length() != 1 || !strings.Contains(testid(doc, "alerts").Text(), "Dead letters are rising") {
		t.Fatalf("alerts: %s", testid(doc, "alerts").Text())
	}
	// The dead-letter alert's endpoint opens its dead deliveries in the
	// event log.
	if href, _ := testid(doc, "alerts").Find(fmt.Sprintf(`a[href^="/events?endpoint_id=%d&"]`, ep.ID)).Attr("href"); !strings.Contains(href, "status=dead") {
		t.Fatal("the alert does not link to the endpoint's dead deliveries in the event log")
	}
}

// TestEndpointsPaged: a long table shows a hundred rows a page, with links
// to the others that keep its search and order; a page past the end shows
// the last one.
func TestEndpointsPaged(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	seedEndpoints(t, env, 250)
	b := env.signIn(base, "v@example.com", "viewer")
	ids := func(doc *goquery.Document) []string {
		var out []string
		testid(doc, "endpoint-row").Each(func(_ int, s *goquery.Selection) {
			id, _ := s.Attr("data-endpoint-id")
			out = append(out, id)
		})
		return out
	}
	_, doc := b.get("/endpoints?sort=p95")
	first := ids(doc)
	if len(first) != 100 {
		t.Fatalf("first page has %d rows, want 100", len(first))
	}
	if n := doc.Find(`[data-testid=endpoint-row] [data-testid=sparkline]`).Length(); n != 300 {
		t.Fatalf("%d sparklines on a page of 100, want 300", n)
	}
	next, ok := testid(doc, "endpoints-pager").Find(`a[rel=next]`).Attr("href")
	if !ok || next != "/endpoints?page=2&sort=p95" {
		t.Fatalf("next link %q", next)
	}
	if testid(doc, "endpoints-pager").Find(`a[rel=prev]`).Length() != 0 {
		t.Fatal("the first page links a previous one")
	}
	_, doc = b.get("/endpoints/table?page=3&sort=p95")
	third := ids(doc)
	if len(third) != 50 {
		t.Fatalf("third page has %d rows, want 50", len(third))
	}
	if c := testid(doc, "table-caption").Text(); !strings.Contains(c, "201–250 of 250 matching") {
		t.Fatalf("caption %q", c)
	}
	_, doc = b.get("/endpoints/table?page=2&sort=p95")
	seen := map[string]bool{}
	for _, id := range append(append(first, ids(doc)...), third...) {
		if seen[id] {
			t.Fatalf("endpoint %s on two pages", id)
		}
		seen[id] = true
	}
	if len(seen) != 250 {
		t.Fatalf("%d endpoints over three pages, want 250", len(seen))
	}
	_, doc = b.get("/endpoints/table?page=9&sort=p95")
	if got := ids(doc); len(got) != 50 || got[0] != third[0] {
		t.Fatal("a page past the end does not show the last page")
	}
}
