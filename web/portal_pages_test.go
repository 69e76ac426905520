package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func (f *portalFixture) auditCount(t *testing.T, action string) int {
	t.Helper()
	var n int
	if err := f.env.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE actor = 'partner Alpha (portal)' AND action = $1", action).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *portalFixture) epPath(rest string) string {
	return "/portal/endpoints/" + strconv.FormatInt(f.epA.ID, 10) + rest
}

// TestPortalPages: the partner's endpoints, an endpoint, the event log and
// an event, with the figures and the request as sent (header values
// masked).
func TestPortalPages(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t)
	b := f.alpha

	t.Run("endpoints", func(t *testing.T) {
		res, doc := b.get("/portal/")
		if res.StatusCode != http.StatusOK {
			t.Fatal(res.StatusCode)
		}
		rows := testid(doc, "endpoint-row")
		if rows.Length() != 1 || !strings.Contains(rows.Text(), "alpha-hooks") {
			t.Fatalf("rows: %q", rows.Text())
		}
		if rows.Find(".badge").Length() == 0 || strings.TrimSpace(testid(doc, "queue").Text()) != "1" || strings.TrimSpace(testid(doc, "dead").Text()) != "1" {
			t.Fatalf("breaker/queue/dead missing: %q", rows.Text())
		}
		if title := doc.Find("title").Text(); !strings.Contains(title, "Delivery portal") {
			t.Fatalf("title %q", title)
		}
	})
	t.Run("product title", func(t *testing.T) {
		env2 := newEnvWithPool(t, f.env.pool, allowLoopback, func(c *Config) { c.Portal.Title = "Acme Deliveries" })
		base2 := env2.server()
		b2 := env2.portalSignIn(base2, f.a, "Alpha")
		_, doc := b2.get("/portal/")
		if got := testid(doc, "portal-brand").Text(); !strings.Contains(got, "Acme Deliveries") {
			t.Fatalf("brand %q", got)
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		backfillLatency(t, f.env.pool, f.epA.ID, 80*time.Millisecond, 0.02, 1)
		f.env.exec("UPDATE endpoint_health SET p50_ms = 80, p95_ms = 140, p99_ms = 190, sample_count = 2000 WHERE endpoint_id = $1", f.epA.ID)
		res, doc := b.get(f.epPath(""))
		if res.StatusCode != http.StatusOK {
			t.Fatal(res.StatusCode)
		}
		if got := testid(doc, "percentiles").Text(); !strings.Contains(got, "80") || !strings.Contains(got, "140") || !strings.Contains(got, "190") {
			t.Fatalf("percentiles %q", got)
		}
		if doc.Find("svg").Length() == 0 {
			t.Fatal("no latency chart")
		}
		if testid(doc, "dead-cluster").Length() != 1 || testid(doc, "secret-row").Length() != 2 {
			t.Fatalf("clusters %d, secrets %d", testid(doc, "dead-cluster").Length(), testid(doc, "secret-row").Length())
		}
		html, _ := doc.Html()
		if strings.Contains(html, "alpha-header-secret") || !strings.Contains(html, "X-Alpha-Key") {
			t.Fatal("header value shown, or header name missing")
		}
	})
	t.Run("event log search and event", func(t *testing.T) {
		_, doc := b.get("/portal/events?q=click-alpha-1")
		rows := testid(doc, "event-row")
		if rows.Length() != 1 {
			t.Fatalf("search found %d", rows.Length())
		}
		id, _ := rows.Attr("data-event-id")
		if id != f.eventA {
			t.Fatalf("found %s, want %s", id, f.eventA)
		}
		f.env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code, response_excerpt)
			VALUES ($1, $2, 1, now(), 42, 'ok', 200, '{"status":"accepted by alpha"}')`, f.deliveryA, f.epA.ID)
		res, doc := b.get("/portal/events/" + f.eventA)
		if res.StatusCode != http.StatusOK {
			t.Fatal(res.StatusCode)
		}
		if testid(doc, "delivery").Length() != 1 || testid(doc, "attempt").Length() != 1 {
			t.Fatalf("deliveries %d attempts %d", testid(doc, "delivery").Length(), testid(doc, "attempt").Length())
		}
		if got := testid(doc, "attempt-excerpt").Text(); got != `{"status":"accepted by alpha"}` {
			t.Fatalf("excerpt %q", got)
		}
		if got := testid(doc, "attempt-latency").Text(); !strings.Contains(got, "42") {
			t.Fatalf("latency %q", got)
		}
		req := testid(doc, "request-text").Text()
		if !strings.Contains(req, "X-Alpha-Key") || strings.Contains(req, "alpha-header-secret") || !strings.Contains(strings.ToLower(req), "webhook-signature") {
			t.Fatalf("request:\n%s", req)
		}
		if res, _ := b.get("/portal/events/not-a-uuid"); res.StatusCode != http.StatusNotFound {
			t.Fatalf("bad id: %d", res.StatusCode)
		}
	})
	t.Run("a postback-only partner does not see the whole payload", func(t *testing.T) {
		g := f.env.createPartner("Gamma")
		f.env.createEndpoint(map[string]any{"partner_id": g, "name": "gamma-pb", "kind": "postback", "method": "GET",
			"url": f.recvA.URL + "/pb?cid={click_id}"})
		rec := f.env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "partner_id": g,
			"payload": map[string]any{"click_id": "g-1", "internal_margin": 9.25}})
		mustStatus(t, rec, http.StatusAccepted)
		id := decodeBody[struct {
			ID string `json:"id"`
		}](t, rec).ID
		gb := f.env.portalSignIn(f.base, g, "Gamma")
		res, doc := gb.get("/portal/events/" + id)
		html, _ := doc.Html()
		if res.StatusCode != http.StatusOK || testid(doc, "payload-postback-only").Length() != 1 || strings.Contains(html, "internal_margin") {
			t.Fatalf("postback-only event page: %d, payload shown: %v", res.StatusCode, strings.Contains(html, "internal_margin"))
		}
		_, doc = b.get("/portal/events/" + f.eventA)
		if testid(doc, "payload").Length() != 1 {
			t.Fatal("a webhook partner does not see the payload")
		}
	})
	t.Run("older page", func(t *testing.T) {
		if res, _ := b.get("/portal/events?cursor=garbage"); res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("bad cursor: %d", res.StatusCode)
		}
	})
}

// TestPortalActions: every action works on the partner's own objects
// through the operator's operations, audited as the partner.
func TestPortalActions(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t)
	b := f.alpha
	ctx := context.Background()
	status := func(id int64) string {
		var s string
		if err := f.env.pool.QueryRow(ctx, "SELECT status FROM deliveries WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("pause and resume", func(t *testing.T) {
		_, doc := b.htmx(http.MethodPost, f.epPath("/pause"), url.Values{})
		if testid(doc, "breaker-resume").Length() != 1 {
			t.Fatal("no resume button after pausing")
		}
		var paused bool
		if err := f.env.pool.QueryRow(ctx, "SELECT paused FROM endpoint_health WHERE endpoint_id = $1", f.epA.ID).Scan(&paused); err != nil {
			t.Fatal(err)
		}
		if !paused || f.auditCount(t, "endpoint.pause") != 1 {
			t.Fatal("not paused, or not audited as the partner")
		}
		if res, _ := b.postForm(f.epPath("/resume"), url.Values{}); res.StatusCode != http.StatusOK {
			t.Fatalf("resume: %d", res.StatusCode)
		}
		if f.auditCount(t, "endpoint.resume") != 1 {
			t.Fatal("resume not audited")
		}
	})
	t.Run("test event", func(t *testing.T) {
		_, doc := b.htmx(http.MethodPost, f.epPath("/test"), url.Values{})
		if got := testid(doc, "test-result-view").Text(); !strings.Contains(got, "ok") {
			t.Fatalf("test fire: %q", got)
		}
		if strings.Contains(testid(doc, "test-request").Text(), "alpha-header-secret") {
			t.Fatal("the test request shows a header value")
		}
		got := f.recvA.requests()
		if len(got) != 1 || got[0].Header.Get("X-Alpha-Key") != "alpha-header-secret" || got[0].Header.Get("webhook-signature") == "" {
			t.Fatalf("receiver got %d requests", len(got))
		}
		if f.auditCount(t, "endpoint.test_fire") != 1 {
			t.Fatal("test fire not audited")
		}
	})
	t.Run("rotate", func(t *testing.T) {
		_, doc := b.htmx(http.MethodPost, f.epPath("/rotate"), url.Values{"overlap": {"3600"}})
		secret := testid(doc, "copybox-value").Text()
		if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(testid(doc, "verify-snippet").Text(), secret) {
			t.Fatalf("new secret %q / snippet", secret)
		}
		if f.auditCount(t, "endpoint.rotate_secret") != 1 {
			t.Fatal("rotation not audited")
		}
		_, doc = b.get(f.epPath(""))
		if strings.Contains(doc.Text(), secret) {
			t.Fatal("the secret is shown again")
		}
		if res, _ := b.htmx(http.MethodPost, f.epPath("/rotate"), url.Values{"overlap": {"-5"}}); res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("negative overlap: %d", res.StatusCode)
		}
	})
	t.Run("stop an old secret", func(t *testing.T) {
		path := f.epPath("/secrets/" + strconv.FormatInt(f.secretA, 10) + "/expire")
		if res, _ := b.htmx(http.MethodPost, path, url.Values{}); res.StatusCode != http.StatusOK {
			t.Fatalf("expire: %d", res.StatusCode)
		}
		if res, _ := b.htmx(http.MethodPost, path, url.Values{}); res.StatusCode != http.StatusNotFound {
			t.Fatalf("expire twice: %d", res.StatusCode)
		}
		var current int64
		if err := f.env.pool.QueryRow(ctx, "SELECT id FROM endpoint_secrets WHERE endpoint_id = $1 AND expires_at IS NULL", f.epA.ID).Scan(&current); err != nil {
			t.Fatal(err)
		}
		if res, _ := b.htmx(http.MethodPost, f.epPath("/secrets/"+strconv.FormatInt(current, 10)+"/expire"), url.Values{}); res.StatusCode != http.StatusNotFound {
			t.Fatalf("expire the current secret: %d", res.StatusCode)
		}
	})
	t.Run("replay one, a cluster, since", func(t *testing.T) {
		_, doc := b.htmx(http.MethodPost, "/portal/deliveries/"+strconv.FormatInt(f.deadA, 10)+"/replay", url.Values{})
		if n, _ := testid(doc, "replayed").Attr("data-count"); n != "1" || status(f.deadA) != "pending" {
			t.Fatalf("replay one: %s, %s", n, status(f.deadA))
		}
		f.env.seedDead(f.epA.ID, "http_status", 503, "", time.Now().Add(-2*time.Hour), time.Now().Add(-90*time.Minute))
		_, doc = b.htmx(http.MethodPost, f.epPath("/replay"), url.Values{"cluster": {clusterKey{f.epA.ID, "http_status", 503}.String()}})
		if n, _ := testid(doc, "replayed").Attr("data-count"); n != "2" {
			t.Fatalf("replay cluster: %s", n)
		}
		f.env.seedDead(f.epA.ID, "timeout", 0, "", time.Now().Add(-3*time.Hour), time.Now().Add(-10*24*time.Hour))
		_, doc = b.htmx(http.MethodPost, f.epPath("/replay"), url.Values{"since": {time.Now().UTC().Add(-5 * time.Hour).Format("2006-01-02T15:04")}})
		if n, _ := testid(doc, "replayed").Attr("data-count"); n != "1" {
			t.Fatalf("replay since: %s", n)
		}
		if res, _ := b.htmx(http.MethodPost, f.epPath("/replay"), url.Values{"since": {"yesterday"}}); res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("bad since: %d", res.StatusCode)
		}
		if f.auditCount(t, "dead_letters.replay") != 3 {
			t.Fatalf("replays audited %d times", f.auditCount(t, "dead_letters.replay"))
		}
	})
	t.Run("resend", func(t *testing.T) {
		f.env.exec("UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE id = $1", f.deliveryA)
		res, _ := b.postForm("/portal/deliveries/"+strconv.FormatInt(f.deliveryA, 10)+"/resend", url.Values{})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/portal/events/"+f.eventA || status(f.deliveryA) != "pending" {
			t.Fatalf("resend: %d at %s, %s", res.StatusCode, res.Request.URL, status(f.deliveryA))
		}
		if f.auditCount(t, "delivery.resend") != 1 {
			t.Fatal("resend not audited")
		}
	})
	t.Run("edit through the operator's validation", func(t *testing.T) {
		_, doc := b.get(f.epPath("/edit"))
		if v, _ := doc.Find(`textarea[name=headers]`).Html(); !strings.Contains(v, "X-Alpha-Key: ********") {
			t.Fatalf("headers field %q", v)
		}
		for _, tc := range []struct{ url, field string }{
			{"not a url", "url"},
			{"http://10.1.2.3/hook", "url"}, // private: the SSRF guard refuses it
			{"ftp://127.0.0.1/x", "url"},
		} {
			res, doc := b.htmx(http.MethodPost, f.epPath("/edit"), url.Values{"url": {tc.url}, "headers": {"X-Alpha-Key: ********"}})
			if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("#portal-"+tc.field+"-error").Length() != 1 {
				t.Fatalf("%q: %d", tc.url, res.StatusCode)
			}
		}
		res, doc := b.htmx(http.MethodPost, f.epPath("/edit"), url.Values{"url": {f.recvA.URL + "/x"}, "headers": {"no colon here"}})
		if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("#portal-headers-error").Length() != 1 {
			t.Fatalf("bad header line: %d", res.StatusCode)
		}
		// The unsaved form's test fire, signed with the endpoint's secrets
		// (the header value typed again: a stored one goes only to the
		// saved URL).
		before := len(f.recvA.requests())
		_, doc = b.htmx(http.MethodPost, f.epPath("/test-fire"), url.Values{"url": {f.recvA.URL + "/moved"}, "headers": {"X-Alpha-Key: alpha-header-secret"}})
		if !strings.Contains(testid(doc, "test-result-view").Text(), "ok") {
			t.Fatalf("form test fire: %q", testid(doc, "test-result-view").Text())
		}
		got := f.recvA.requests()
		if len(got) != before+1 || got[len(got)-1].Path != "/moved" || got[len(got)-1].Header.Get("X-Alpha-Key") != "alpha-header-secret" {
			t.Fatalf("form test fire reached %d", len(got)-before)
		}
		res, _ = b.postForm(f.epPath("/edit"), url.Values{"url": {f.recvA.URL + "/moved"}, "headers": {"X-Alpha-Key: ********\nX-Extra: 1"}})
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != f.epPath("") {
			t.Fatalf("save: %d at %s", res.StatusCode, res.Request.URL)
		}
		rec := f.env.do(http.MethodGet, "/api/v1/endpoints/"+strconv.FormatInt(f.epA.ID, 10), nil)
		ep := decodeBody[endpointJSON](t, rec)
		if ep.URL != f.recvA.URL+"/moved" || len(ep.Headers) != 2 {
			t.Fatalf("saved %s %v", ep.URL, ep.Headers)
		}
		if f.auditCount(t, "endpoint.update") != 1 {
			t.Fatal("edit not audited as the partner")
		}
	})
	t.Run("postback preview", func(t *testing.T) {
		pb := f.env.createEndpoint(map[string]any{"partner_id": f.a, "name": "alpha-pb", "kind": "postback", "method": "GET",
			"url": f.recvA.URL + "/pb?cid={click_id}&payout={payout}"})
		_, doc := b.htmx(http.MethodPost, "/portal/endpoints/"+strconv.FormatInt(pb.ID, 10)+"/preview", url.Values{"url": {f.recvA.URL + "/pb?cid={click_id}&x={nope}"}})
		if doc.Find("mark[data-macro=click_id]").Length() != 1 || doc.Find("mark[data-macro=nope]").Length() != 1 {
			t.Fatal("preview does not mark the macros")
		}
		res, _ := b.htmx(http.MethodPost, "/portal/endpoints/"+strconv.FormatInt(pb.ID, 10)+"/edit", url.Values{"url": {f.recvA.URL + "/pb?cid={click_id"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("unbalanced template: %d", res.StatusCode)
		}
	})
	t.Run("operators see the partner's actions", func(t *testing.T) {
		op := f.env.signIn(f.base, "op@example.com", "operator")
		_, doc := op.get("/audit")
		if !strings.Contains(doc.Text(), "partner Alpha (portal)") {
			t.Fatal("the audit page does not show the partner's actions")
		}
	})
}
