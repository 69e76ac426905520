package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// deliveryCount counts an endpoint's deliveries.
func deliveryCount(t testing.TB, env *testEnv, endpointID int64) int {
	t.Helper()
	var n int
	if err := env.pool.QueryRow(context.Background(), "SELECT count(*) FROM deliveries WHERE endpoint_id = $1", endpointID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAPIEndpointFilter(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	filtered := env.createEndpoint(map[string]any{"partner_id": pid, "name": "approved only", "kind": "webhook",
		"url": "https://hooks.acme.invalid/approved", "filter": map[string]any{"status": "approved", "payout": map[string]any{"$gte": 1}}})
	if got := string(filtered.Filter); got != `{"payout":{"$gte":1},"status":"approved"}` {
		t.Fatalf("created filter = %s", got)
	}
	all := env.createEndpoint(map[string]any{"partner_id": pid, "name": "everything", "kind": "webhook", "url": "https://hooks.acme.invalid/all"})
	if string(all.Filter) != "null" {
		t.Fatalf("no filter reads as %s, want null", all.Filter)
	}
	path := fmt.Sprintf("/api/v1/endpoints/%d", filtered.ID)

	t.Run("GET returns the filter", func(t *testing.T) {
		rec := env.do(http.MethodGet, path, nil)
		mustStatus(t, rec, http.StatusOK)
		var got map[string]json.RawMessage
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		var f map[string]any
		if err := json.Unmarshal(got["filter"], &f); err != nil || f["status"] != "approved" {
			t.Fatalf("GET filter = %s", got["filter"])
		}
	})

	t.Run("only matching events are delivered", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{
			map[string]any{"type": "conversion", "payload": map[string]any{"status": "approved", "payout": 5}},      // match
			map[string]any{"type": "conversion", "payload": map[string]any{"status": "approved", "payout": 0.5}},    // payout too low
			map[string]any{"type": "conversion", "payload": map[string]any{"status": "rejected", "payout": 5}},      // status
			map[string]any{"type": "conversion", "payload": map[string]any{"status": "approved", "payout": "2.00"}}, // numeric string
			map[string]any{"type": "conversion", "payload": map[string]any{"payout": 9}},                            // no status
		}})
		mustStatus(t, rec, http.StatusAccepted)
		res := decodeBody[struct{ Results []ingestResult }](t, rec).Results
		want := []bool{true, false, false, true, false}
		for i, r := range res {
			got := false
			for _, d := range r.Deliveries {
				if d.EndpointID == filtered.ID {
					got = true
				}
			}
			if got != want[i] || len(r.Deliveries) != map[bool]int{true: 2, false: 1}[want[i]] {
				t.Errorf("event %d: deliveries %+v, want filtered endpoint %v", i, r.Deliveries, want[i])
			}
		}
		if n := deliveryCount(t, env, filtered.ID); n != 2 {
			t.Errorf("filtered endpoint has %d deliveries, want 2", n)
		}
		if n := deliveryCount(t, env, all.ID); n != 5 {
			t.Errorf("unfiltered endpoint has %d deliveries, want 5", n)
		}
		// The single-event route filters the same way.
		rec = env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"status": "rejected", "payout": 3}})
		mustStatus(t, rec, http.StatusAccepted)
		rec = env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"status": "approved", "payout": 3}})
		mustStatus(t, rec, http.StatusAccepted)
		if n := deliveryCount(t, env, filtered.ID); n != 3 {
			t.Errorf("filtered endpoint has %d deliveries, want 3", n)
		}
	})

	t.Run("invalid filter is a 422 naming filter", func(t *testing.T) {
		for _, bad := range []struct {
			filter any
			says   string
		}{
			{map[string]any{"payout": map[string]any{"$gte": "a", "$regex": "x"}}, "payout.$regex"},
			{map[string]any{"country": map[string]any{"$in": "BR"}}, "country.$in: must be an array"},
			{[]any{1}, "must be a JSON object"},
			{"status=approved", "must be a JSON object"},
		} {
			before := countRows(t, env.pool, "endpoints")
			eb := mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": "bad", "kind": "webhook",
				"url": "https://hooks.acme.invalid/bad", "filter": bad.filter}), http.StatusUnprocessableEntity, "filter")
			if !strings.Contains(eb.Error.Message, bad.says) {
				t.Errorf("message %q does not say %q", eb.Error.Message, bad.says)
			}
			if countRows(t, env.pool, "endpoints") != before {
				t.Error("an invalid filter created an endpoint")
			}
		}
		eb := mustError(t, env.do(http.MethodPatch, path, map[string]any{"filter": map[string]any{"$or": []any{}}}), http.StatusUnprocessableEntity, "filter")
		if !strings.Contains(eb.Error.Message, "$or") {
			t.Errorf("PATCH message %q does not name $or", eb.Error.Message)
		}
	})

	t.Run("PATCH replaces, keeps and removes the filter", func(t *testing.T) {
		rec := env.do(http.MethodPatch, path, map[string]any{"filter": map[string]any{"country": map[string]any{"$in": []string{"BR", "PT"}}}})
		mustStatus(t, rec, http.StatusOK)
		if e := decodeBody[endpointJSON](t, rec); !strings.Contains(string(e.Filter), `"$in"`) {
			t.Fatalf("patched filter = %s", e.Filter)
		}
		rec = env.do(http.MethodPatch, path, map[string]any{"max_attempts": 7})
		if e := decodeBody[endpointJSON](t, rec); !strings.Contains(string(e.Filter), `"$in"`) {
			t.Fatalf("a PATCH without filter changed it to %s", e.Filter)
		}
		before := deliveryCount(t, env, filtered.ID)
		env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"country": "ES"}})
		env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"country": "PT"}})
		if n := deliveryCount(t, env, filtered.ID); n != before+1 {
			t.Errorf("after the new filter: %d deliveries, want %d", n, before+1)
		}
		rec = env.do(http.MethodPatch, path, `{"filter": null}`)
		mustStatus(t, rec, http.StatusOK)
		if e := decodeBody[endpointJSON](t, rec); string(e.Filter) != "null" {
			t.Fatalf("filter after null = %s", e.Filter)
		}
		env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"country": "ES"}})
		if n := deliveryCount(t, env, filtered.ID); n != before+2 {
			t.Errorf("without a filter: %d deliveries, want %d", n, before+2)
		}
		var audit string
		if err := env.pool.QueryRow(context.Background(), "SELECT details::text FROM audit_log WHERE action = 'endpoint.update' ORDER BY id DESC LIMIT 1").Scan(&audit); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(audit, "filter") {
			t.Errorf("audit %s does not name filter", audit)
		}
	})
}

// TestFanOutStoredFilterThatDoesNotCompile: a stored filter the language
// no longer accepts (written before a change to it) filters nothing: an
// extra delivery rather than a lost one.
func TestFanOutStoredFilterThatDoesNotCompile(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "legacy", "kind": "webhook", "url": "https://hooks.acme.invalid/in",
		"filter": map[string]any{"status": "approved"}})
	if _, err := env.pool.Exec(context.Background(), `UPDATE endpoints SET filter = '{"status": {"$regex": "^appr"}}' WHERE id = $1`, e.ID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "payload": map[string]any{"status": "rejected"}}), http.StatusAccepted)
	if n := deliveryCount(t, env, e.ID); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}
