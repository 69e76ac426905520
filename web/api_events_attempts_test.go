package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

type attemptLogPage struct {
	Data []struct {
		ID              int64     `json:"id"`
		DeliveryID      int64     `json:"delivery_id"`
		EventID         string    `json:"event_id"`
		AttemptNo       int32     `json:"attempt_no"`
		StartedAt       time.Time `json:"started_at"`
		DurationMs      float64   `json:"duration_ms"`
		Outcome         string    `json:"outcome"`
		StatusCode      *int32    `json:"status_code"`
		ErrorClass      *string   `json:"error_class"`
		Error           *string   `json:"error"`
		ResponseExcerpt *string   `json:"response_excerpt"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

func (p attemptLogPage) ids() []int64 {
	ids := make([]int64, len(p.Data))
	for i, d := range p.Data {
		ids[i] = d.ID
	}
	return ids
}

func TestAPIEndpointAttempts(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://hooks.acme.test/in"})
	other := env.createEndpoint(map[string]any{"partner_id": pid, "name": "other", "kind": "webhook", "url": "https://other.acme.test/in"})
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
	mustStatus(t, rec, http.StatusAccepted)
	ev := decodeBody[acceptedBody](t, rec)
	var del, otherDel int64
	for _, d := range ev.Deliveries {
		if d.EndpointID == ep.ID {
			del = d.ID
		} else {
			otherDel = d.ID
		}
	}
	// 12 attempts a minute apart ending two minutes ago, every third a
	// success, two of them at the same instant; one of another endpoint.
	base := time.Now().Add(-14 * time.Minute).UTC().Truncate(time.Second)
	env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code, error_class, error, response_excerpt)
		SELECT $1, $2, n, $3::timestamptz + make_interval(mins => least(n, 11)), 12.5,
		       CASE WHEN n % 3 = 0 THEN 'ok' ELSE 'transient' END,
		       CASE WHEN n % 3 = 0 THEN 200 ELSE 503 END,
		       CASE WHEN n % 3 = 0 THEN NULL ELSE 'http_5xx' END,
		       CASE WHEN n % 3 = 0 THEN NULL ELSE 'HTTP 503' END, 'body ' || n
		FROM generate_series(1, 12) n`, del, ep.ID, base)
	env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
		VALUES ($1, $2, 1, now(), 1, 'ok')`, otherDel, other.ID)
	path := fmt.Sprintf("/api/v1/endpoints/%d/attempts", ep.ID)
	list := func(q url.Values) attemptLogPage {
		t.Helper()
		rec := env.do(http.MethodGet, path+"?"+q.Encode(), nil)
		mustStatus(t, rec, http.StatusOK)
		return decodeBody[attemptLogPage](t, rec)
	}

	t.Run("newest first, every field", func(t *testing.T) {
		p := list(nil)
		if len(p.Data) != 12 || p.NextCursor != nil {
			t.Fatalf("%d attempts, cursor %v", len(p.Data), p.NextCursor)
		}
		a := p.Data[0]
		if a.AttemptNo != 12 && a.AttemptNo != 11 || a.DeliveryID != del || a.EventID != ev.ID || a.DurationMs != 12.5 {
			t.Fatalf("%+v", a)
		}
		last := p.Data[11]
		if last.AttemptNo != 1 || last.Outcome != "transient" || *last.StatusCode != 503 || *last.ErrorClass != "http_5xx" ||
			*last.Error != "HTTP 503" || *last.ResponseExcerpt != "body 1" || !last.StartedAt.Equal(base.Add(time.Minute)) {
			t.Fatalf("%+v", last)
		}
	})
	t.Run("outcome", func(t *testing.T) {
		for _, a := range list(url.Values{"outcome": {"ok"}}).Data {
			if a.Outcome != "ok" || a.AttemptNo%3 != 0 {
				t.Fatalf("ok filter returned %+v", a)
			}
		}
		if n := len(list(url.Values{"outcome": {"ok"}}).Data); n != 4 {
			t.Fatalf("%d ok", n)
		}
		if n := len(list(url.Values{"outcome": {"failed"}}).Data); n != 8 {
			t.Fatalf("%d failed", n)
		}
	})
	t.Run("status code", func(t *testing.T) {
		p := list(url.Values{"status_code": {"200"}})
		if len(p.Data) != 4 {
			t.Fatalf("%d attempts answered 200, want 4", len(p.Data))
		}
		for _, a := range p.Data {
			if a.StatusCode == nil || *a.StatusCode != 200 {
				t.Fatalf("status_code=200 returned %+v", a)
			}
		}
	})
	t.Run("time range", func(t *testing.T) {
		p := list(url.Values{"since": {base.Add(3 * time.Minute).Format(time.RFC3339)}, "until": {base.Add(5 * time.Minute).Format(time.RFC3339)}})
		if len(p.Data) != 2 || p.Data[0].AttemptNo != 4 || p.Data[1].AttemptNo != 3 {
			t.Fatalf("%+v", p.Data)
		}
	})
	t.Run("cursor round trip while attempts arrive", func(t *testing.T) {
		want := list(nil).ids()
		var got []int64
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("paging does not end")
			}
			p := list(url.Values{"limit": {"5"}, "cursor": {cursor}})
			got = append(got, p.ids()...)
			env.exec(`INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome)
				VALUES ($1, $2, 99, now(), 1, 'ok')`, del, ep.ID)
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Fatalf("walked %v, want %v", got, want)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for q, field := range map[string]string{
			"outcome=transient": "outcome", "limit=x": "limit", "cursor=" + url.QueryEscape("!!"): "cursor",
			"cursor=" + encodeCursor(time.Now(), "abc"): "cursor", "since=2026-05-01": "since", "until=soon": "until",
			"status_code=99": "status_code", "status_code=2xx": "status_code",
		} {
			mustError(t, env.do(http.MethodGet, path+"?"+q, nil), http.StatusUnprocessableEntity, field)
		}
	})
	t.Run("unknown endpoint", func(t *testing.T) {
		mustError(t, env.do(http.MethodGet, "/api/v1/endpoints/999999/attempts", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodGet, "/api/v1/endpoints/x1/attempts", nil), http.StatusNotFound, "")
	})
}
