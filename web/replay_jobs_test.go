package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// replaySetup makes two endpoints of one partner and posts events to both:
// three order.paid (click ids c0..c2) and two lead.created, then makes the
// first endpoint's order.paid deliveries dead and everything else
// delivered.
func replaySetup(t *testing.T, env *testEnv) (ep, other int64) {
	t.Helper()
	pid := env.createPartner("Acme")
	ep = env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://orders.acme.invalid/in"}).ID
	other = env.createEndpoint(map[string]any{"partner_id": pid, "name": "audit", "kind": "webhook", "url": "https://audit.acme.invalid/in"}).ID
	for i := range 3 {
		mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.paid", "payload": map[string]any{"click_id": fmt.Sprint("c", i)}}), http.StatusAccepted)
	}
	for range 2 {
		mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "lead.created", "payload": map[string]any{}}), http.StatusAccepted)
	}
	env.exec(`UPDATE deliveries SET status = 'delivered', delivered_at = now(), attempt_count = 1`)
	env.exec(`UPDATE deliveries d SET status = 'dead', dead_at = now(), delivered_at = NULL, attempt_count = 5
		FROM events ev WHERE ev.id = d.event_id AND ev.type = 'order.paid' AND d.endpoint_id = $1`, ep)
	return ep, other
}

func TestAPIBulkReplay(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ep, other := replaySetup(t, env)
	count := func(body map[string]any) int64 {
		t.Helper()
		body["dry_run"] = true
		rec := env.do(http.MethodPost, "/api/v1/deliveries/replay", body)
		mustStatus(t, rec, http.StatusOK)
		return decodeBody[struct {
			Count int64 `json:"count"`
		}](t, rec).Count
	}
	hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		body map[string]any
		want int64
	}{
		{map[string]any{"endpoint_id": ep}, 3},
		{map[string]any{"endpoint_id": other}, 0},
		{map[string]any{"since": hourAgo}, 3},
		{map[string]any{"status": "delivered", "since": hourAgo}, 7},
		{map[string]any{"status": "delivered", "endpoint_id": other, "event_type": "order.*"}, 3},
		{map[string]any{"status": "delivered", "endpoint_id": other, "event_type": "lead.created"}, 2},
		{map[string]any{"endpoint_id": ep, "q": "c1"}, 1},
		{map[string]any{"endpoint_id": ep, "q": "nope"}, 0},
		{map[string]any{"endpoint_id": ep, "until": hourAgo}, 0},
	} {
		if got := count(c.body); got != c.want {
			t.Errorf("%v counts %d, want %d", c.body, got, c.want)
		}
	}
	env.waitDB("a dry run changes nothing", time.Second, `SELECT NOT EXISTS (SELECT 1 FROM deliveries WHERE replay_count > 0) AND NOT EXISTS (SELECT 1 FROM replay_jobs)`)

	t.Run("invalid", func(t *testing.T) {
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"status": "pending", "endpoint_id": ep}, "status"},
			{map[string]any{}, "since"},
			{map[string]any{"endpoint_id": ep, "since": "yesterday"}, "since"},
			{map[string]any{"endpoint_id": ep, "since": hourAgo, "until": hourAgo}, "until"},
			{map[string]any{"endpoint_id": ep, "event_type": strings.Repeat("x", 300)}, "event_type"},
			{map[string]any{"endpoint_id": -1}, "endpoint_id"},
			{map[string]any{"endpoint_id": ep, "surprise": 1}, "surprise"},
		} {
			mustError(t, env.do(http.MethodPost, "/api/v1/deliveries/replay", c.body), http.StatusUnprocessableEntity, c.field)
		}
		mustError(t, env.do(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"endpoint_id": 999999}), http.StatusNotFound, "")
	})

	t.Run("nothing matches: no replay", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"endpoint_id": other})
		mustStatus(t, rec, http.StatusOK)
		env.waitDB("no job", time.Second, `SELECT NOT EXISTS (SELECT 1 FROM replay_jobs)`)
	})

	t.Run("start, progress, audit, cancel", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"endpoint_id": ep, "event_type": "order.paid"})
		mustStatus(t, rec, http.StatusAccepted)
		job := decodeBody[replayJobView](t, rec)
		if job.State != "running" || job.Total != 3 || job.Replayed != 0 || job.Filter.Status != "dead" || *job.Filter.EndpointID != ep {
			t.Fatalf("started %+v", job)
		}
		env.waitDB("audited", time.Second, `SELECT EXISTS (SELECT 1 FROM audit_log WHERE action = 'deliveries.replay' AND target_id = $1::bigint::text)`, job.ID)
		// The worker's batch, as it writes it (worker tests cover the
		// worker): progress is counted by the job's stamp.
		env.exec(`UPDATE deliveries SET status = 'pending', replayed_at = (SELECT stamp FROM replay_jobs WHERE id = $1) WHERE status = 'dead'`, job.ID)
		env.exec(`UPDATE replay_jobs SET replayed = 3 WHERE id = $1`, job.ID)
		rec = env.do(http.MethodGet, fmt.Sprintf("/api/v1/replays/%d", job.ID), nil)
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[replayJobView](t, rec); got.Replayed != 3 || got.Waiting != 3 {
			t.Fatalf("progress %+v", got)
		}
		rec = env.do(http.MethodPost, fmt.Sprintf("/api/v1/replays/%d/cancel", job.ID), nil)
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[replayJobView](t, rec); got.State != "canceled" || got.FinishedAt == nil {
			t.Fatalf("canceled %+v", got)
		}
		mustError(t, env.do(http.MethodPost, fmt.Sprintf("/api/v1/replays/%d/cancel", job.ID), nil), http.StatusConflict, "state")
		mustError(t, env.do(http.MethodGet, "/api/v1/replays/999999", nil), http.StatusNotFound, "")
	})
}

// TestDashBulkReplay: the form counts before it offers to start; a viewer
// sees the count but cannot start; an operator's start opens the replay's
// progress; the event log's dead filter links to the prefilled form.
func TestDashBulkReplay(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ep, _ := replaySetup(t, env)
	base := env.server()
	viewer := env.signIn(base, "viewer@example.com", "viewer")
	q := url.Values{"endpoint_id": {fmt.Sprint(ep)}, "status": {"dead"}, "preview": {"1"}}
	res, doc := viewer.get("/deliveries/replay?" + q.Encode())
	if res.StatusCode != http.StatusOK || testid(doc, "replay-count").AttrOr("data-count", "") != "3" {
		t.Fatalf("preview: %d, count %q", res.StatusCode, testid(doc, "replay-count").AttrOr("data-count", ""))
	}
	if testid(doc, "replay-start").Length() != 0 {
		t.Fatal("a viewer is offered to start a replay")
	}
	res, _ = viewer.postForm("/deliveries/replay", url.Values{"endpoint_id": {fmt.Sprint(ep)}, "status": {"dead"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a viewer's forged start: %d, want 403", res.StatusCode)
	}
	res, doc = viewer.get("/deliveries/replay?preview=1&status=dead")
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Find(`[data-field=since] [data-testid=field-error]`).Text(), "endpoint") {
		t.Fatalf("a filter without endpoint or start: %d", res.StatusCode)
	}

	op := env.signIn(base, "op@example.com", "operator")
	_, doc = op.get(fmt.Sprintf("/events?status=dead&endpoint_id=%d", ep))
	link := testid(doc, "events-replay").AttrOr("href", "")
	if !strings.HasPrefix(link, "/deliveries/replay?") {
		t.Fatalf("the event log's replay link is %q", link)
	}
	_, doc = op.get(link)
	form := testid(doc, "replay-confirm")
	if testid(doc, "replay-count").AttrOr("data-count", "") != "3" || form.Length() != 1 {
		t.Fatal("the prefilled form does not count 3 with a start button")
	}
	vals := url.Values{}
	form.Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
		vals.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	res, doc = op.postForm("/deliveries/replay", vals)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Request.URL.Path, "/replays/") {
		t.Fatalf("start: %d at %s", res.StatusCode, res.Request.URL)
	}
	if testid(doc, "replay-state").Text() != "running" || !strings.Contains(testid(doc, "replay-replayed").Text(), "of 3") {
		t.Fatalf("progress page: %q %q", testid(doc, "replay-state").Text(), testid(doc, "replay-replayed").Text())
	}
	env.waitDB("one job, audited as the operator", time.Second, `SELECT count(*) = 1 FROM replay_jobs WHERE total = 3 AND created_by = 'user:op@example.com'`)
}
