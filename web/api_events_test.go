package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

type acceptedBody struct {
	ID         string        `json:"id"`
	Deliveries []deliveryRef `json:"deliveries"`
	Duplicate  bool          `json:"duplicate"`
}

// setupDeliveryTargets creates one webhook for every type and one postback
// for conversion.approved only.
func setupDeliveryTargets(env *testEnv) (pid int64) {
	pid = env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "all events", "kind": "webhook", "url": "https://hooks.acme.example/in"})
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "tracker", "kind": "postback",
		"url": "https://t.example/pb?cid={click_id}&payout={payout}", "event_types": []string{"conversion.approved"}})
	return pid
}

func TestAPIEventIngest(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := setupDeliveryTargets(env)
	payload := map[string]any{"click_id": "abc", "payout": 12.5}

	var first acceptedBody
	t.Run("fans out to subscribed endpoints", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": payload, "idempotency_key": "conv-1"})
		mustStatus(t, rec, http.StatusAccepted)
		first = decodeBody[acceptedBody](t, rec)
		if len(first.Deliveries) != 2 || first.Deliveries[0].Status != "pending" {
			t.Fatalf("deliveries = %+v", first.Deliveries)
		}
		if !strings.HasPrefix(first.ID, "") || len(first.ID) != 36 || first.ID[14] != '7' {
			t.Fatalf("id %q is not a UUIDv7", first.ID)
		}
	})
	t.Run("other type reaches only the catch-all endpoint", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
		mustStatus(t, rec, http.StatusAccepted)
		if b := decodeBody[acceptedBody](t, rec); len(b.Deliveries) != 1 {
			t.Fatalf("deliveries = %+v", b.Deliveries)
		}
	})
	t.Run("same idempotency key returns the original", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": payload, "idempotency_key": "conv-1"})
		mustStatus(t, rec, http.StatusOK)
		b := decodeBody[acceptedBody](t, rec)
		if b.ID != first.ID || len(b.Deliveries) != 2 || !b.Duplicate {
			t.Fatalf("replay = %+v, first = %+v", b, first)
		}
		var n int
		if err := env.pool.QueryRow(context.Background(), "SELECT count(*) FROM deliveries WHERE event_id = $1", first.ID).Scan(&n); err != nil || n != 2 {
			t.Fatalf("deliveries after replay = %d, %v", n, err)
		}
	})
	t.Run("Idempotency-Key header works too", func(t *testing.T) {
		body := map[string]any{"type": "conversion.approved", "payload": payload}
		mustStatus(t, env.do(http.MethodPost, "/api/v1/events", body, "Idempotency-Key", "hdr-1"), http.StatusAccepted)
		mustStatus(t, env.do(http.MethodPost, "/api/v1/events", body, "Idempotency-Key", "hdr-1"), http.StatusOK)
	})
	t.Run("same key with a different event is 409", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "other"}, "idempotency_key": "conv-1"})
		mustError(t, rec, http.StatusConflict, "idempotency_key")
	})
	t.Run("partner_id restricts the fan-out", func(t *testing.T) {
		other := env.createPartner("Other")
		env.createEndpoint(map[string]any{"partner_id": other, "name": "o", "kind": "webhook", "url": "https://o.example/"})
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{}, "partner_id": other})
		mustStatus(t, rec, http.StatusAccepted)
		if b := decodeBody[acceptedBody](t, rec); len(b.Deliveries) != 1 {
			t.Fatalf("deliveries = %+v", b.Deliveries)
		}
		mustError(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "x", "payload": map[string]any{}, "partner_id": 987654}), http.StatusUnprocessableEntity, "partner_id")
	})
	t.Run("payload bytes are kept exactly, whitespace aside", func(t *testing.T) {
		raw := `{"type":"order.created","payload":{ "z": 1, "a": 12.50, "n": 1e3 }}`
		rec := env.do(http.MethodPost, "/api/v1/events", raw)
		mustStatus(t, rec, http.StatusAccepted)
		id := decodeBody[acceptedBody](t, rec).ID
		var stored string
		if err := env.pool.QueryRow(context.Background(), "SELECT payload::text FROM events WHERE id = $1", id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != `{"z":1,"a":12.50,"n":1e3}` {
			t.Fatalf("stored payload %s", stored)
		}
	})
	t.Run("event detail shows deliveries", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/events/"+first.ID, nil)
		mustStatus(t, rec, http.StatusOK)
		ev := decodeBody[struct {
			Type       string
			Deliveries []deliveryJSON
		}](t, rec)
		if ev.Type != "conversion.approved" || len(ev.Deliveries) != 2 || ev.Deliveries[0].Status != "pending" || ev.Deliveries[0].NextAttemptAt == nil {
			t.Fatalf("detail = %+v", ev)
		}
		mustError(t, env.do(http.MethodGet, "/api/v1/events/0190c8e2-0000-7000-8000-000000000000", nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodGet, "/api/v1/events/not-a-uuid", nil), http.StatusNotFound, "")
	})
	t.Run("disabled endpoints get deliveries held pending", func(t *testing.T) {
		rows, _ := env.pool.Query(context.Background(), "SELECT id FROM endpoints WHERE kind = 'webhook'")
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) != 2 {
			t.Fatalf("webhooks = %v, %v", ids, err)
		}
		for _, id := range ids {
			mustStatus(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", id), map[string]any{"enabled": false}), http.StatusOK)
		}
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{}})
		b := decodeBody[acceptedBody](t, rec)
		if len(b.Deliveries) != 2 {
			t.Fatalf("deliveries to disabled endpoints: %+v, want 2 held", b.Deliveries)
		}
		for _, d := range b.Deliveries {
			if d.Status != "pending" {
				t.Fatalf("held delivery %+v is not pending", d)
			}
		}
	})
	_ = pid
}

func TestAPIEventValidation(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	setupDeliveryTargets(env)
	cases := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"missing type", map[string]any{"payload": map[string]any{}}, 422, "type"},
		{"bad type", map[string]any{"type": "has spaces", "payload": map[string]any{}}, 422, "type"},
		{"missing payload", map[string]any{"type": "a.b"}, 422, "payload"},
		{"array payload", map[string]any{"type": "a.b", "payload": []int{1}}, 422, "payload"},
		{"empty idempotency key", map[string]any{"type": "a.b", "payload": map[string]any{}, "idempotency_key": ""}, 422, "idempotency_key"},
		{"unknown field", map[string]any{"type": "a.b", "payload": map[string]any{}, "extra": 1}, 422, "extra"},
		{"malformed", `{"type": "a.b", "payload": {]}`, 400, ""},
		{"trailing data", `{"type": "a.b", "payload": {}} {}`, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustError(t, env.do(http.MethodPost, "/api/v1/events", tc.body), tc.status, tc.field)
		})
	}
	t.Run("body over the limit is 413", func(t *testing.T) {
		big := `{"type":"a.b","payload":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`
		mustError(t, env.do(http.MethodPost, "/api/v1/events", big), http.StatusRequestEntityTooLarge, "")
	})
	if n := countRows(t, env.pool, "events"); n != 0 {
		t.Fatalf("rejected events were stored: %d", n)
	}
}

func TestAPIEventBatch(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	setupDeliveryTargets(env)
	rec := env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{
		map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "1"}, "idempotency_key": "b-1"},
		map[string]any{"type": "bad type", "payload": map[string]any{}},
		map[string]any{"type": "order.created", "payload": map[string]any{}},
		map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "1"}, "idempotency_key": "b-1"},
	}})
	mustStatus(t, rec, http.StatusAccepted)
	b := decodeBody[struct {
		Results                       []ingestResult
		Accepted, Duplicate, Rejected int
	}](t, rec)
	if b.Accepted != 2 || b.Rejected != 1 || b.Duplicate != 1 {
		t.Fatalf("counts = %+v", b)
	}
	if r := b.Results[1]; r.Status != ingestRejected || r.Error == nil || r.Error.Field != "type" {
		t.Fatalf("result 1 = %+v", r)
	}
	if len(b.Results[0].Deliveries) != 2 || len(b.Results[2].Deliveries) != 1 {
		t.Fatalf("deliveries = %+v", b.Results)
	}
	if *b.Results[3].ID != *b.Results[0].ID {
		t.Fatal("in-batch duplicate did not resolve to the first event")
	}
	if n := countRows(t, env.pool, "deliveries"); n != 3 {
		t.Fatalf("deliveries = %d, want 3", n)
	}
	t.Run("limits", func(t *testing.T) {
		mustError(t, env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{}}), 422, "events")
		mustError(t, env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{}), 422, "events")
		many := make([]map[string]any, 1001)
		for i := range many {
			many[i] = map[string]any{"type": "a", "payload": map[string]any{}}
		}
		big := newEnvWithPool(t, env.pool)
		big.key = env.key
		big.srv.cfg.MaxBodyBytes = 1 << 20
		mustError(t, big.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": many}), 422, "events")
	})
}

func TestAPIDatabaseOutage(t *testing.T) {
	t.Parallel()
	env := newEnvWithPool(t, unreachablePool(t))
	env.key = "hk_anything"
	t.Run("API answers 503 with Retry-After", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "a.b", "payload": map[string]any{}})
		mustError(t, rec, http.StatusServiceUnavailable, "")
		if rec.Header().Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
		if strings.Contains(rec.Body.String(), "nonexistent") || strings.Contains(rec.Body.String(), "dial") {
			t.Fatalf("503 leaks internals: %s", rec.Body.String())
		}
	})
	t.Run("readyz is 503", func(t *testing.T) {
		mustStatus(t, env.do(http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable)
	})
	t.Run("healthz stays 200", func(t *testing.T) {
		mustStatus(t, env.do(http.MethodGet, "/healthz", nil), http.StatusOK)
	})
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	mustStatus(t, env.do(http.MethodGet, "/readyz", nil), http.StatusOK)
}
