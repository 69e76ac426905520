package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// TestAPIPostbackRules: value maps, unmapped and the payout share are
// accepted by POST and PATCH, shown by GET, stored exactly (NULL when not
// used, so endpoints that do not use them stay as they were), and bad input
// is a 422 naming its field.
func TestAPIPostbackRules(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Rules")
	base := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"partner_id": pid, "name": name, "kind": "postback",
			"url": "https://t.rules.invalid/pb?subid={click_id}&status={status}&payout={payout}"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	stored := func(id int64) []byte {
		t.Helper()
		var raw []byte
		if err := env.pool.QueryRow(context.Background(), "SELECT postback_rules FROM endpoints WHERE id = $1", id).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	maps := map[string]any{"status": map[string]any{"approved": "sale", "pending": "lead", "declined": "rejected"}}

	t.Run("without rules nothing is stored", func(t *testing.T) {
		e := env.createEndpoint(base("plain", nil))
		if raw := stored(e.ID); raw != nil {
			t.Fatalf("postback_rules = %s, want NULL", raw)
		}
		if e.ValueMaps != nil || e.Unmapped != "send" || string(e.PayoutShare) != "null" || e.PayoutField != "payout" {
			t.Fatalf("defaults shown as %+v", e.rulesJSON)
		}
	})

	var id int64
	t.Run("create with rules", func(t *testing.T) {
		e := env.createEndpoint(base("keitaro", map[string]any{"value_maps": maps, "unmapped": "skip", "payout_share": 70, "payout_field": "amount"}))
		id = e.ID
		if e.ValueMaps["status"]["approved"] != "sale" || e.Unmapped != "skip" || string(e.PayoutShare) != "70" || e.PayoutField != "amount" {
			t.Fatalf("saved %+v", e.rulesJSON)
		}
		var r map[string]any
		if err := json.Unmarshal(stored(id), &r); err != nil || r["payout_share_bp"] != float64(7000) {
			t.Fatalf("stored %s (%v), want payout_share_bp 7000", stored(id), err)
		}
		rec := env.do(http.MethodGet, "/api/v1/endpoints/"+strconv.FormatInt(id, 10), nil)
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[endpointJSON](t, rec); got.ValueMaps["status"]["declined"] != "rejected" || string(got.PayoutShare) != "70" {
			t.Fatalf("GET shows %+v", got.rulesJSON)
		}
	})
	path := func() string { return "/api/v1/endpoints/" + strconv.FormatInt(id, 10) }

	t.Run("patch keeps rules it does not name", func(t *testing.T) {
		rec := env.do(http.MethodPatch, path(), map[string]any{"name": "keitaro-2"})
		mustStatus(t, rec, http.StatusOK)
		if got := decodeBody[endpointJSON](t, rec); got.Unmapped != "skip" || len(got.ValueMaps["status"]) != 3 {
			t.Fatalf("after an unrelated PATCH: %+v", got.rulesJSON)
		}
	})
	t.Run("patch replaces the maps whole, and a share as a string", func(t *testing.T) {
		rec := env.do(http.MethodPatch, path(), map[string]any{"value_maps": map[string]any{"status": map[string]any{"approved": "1"}}, "payout_share": "62.5"})
		mustStatus(t, rec, http.StatusOK)
		got := decodeBody[endpointJSON](t, rec)
		if len(got.ValueMaps["status"]) != 1 || got.ValueMaps["status"]["approved"] != "1" || string(got.PayoutShare) != "62.5" {
			t.Fatalf("after PATCH: %+v", got.rulesJSON)
		}
	})
	t.Run("patch null removes them", func(t *testing.T) {
		rec := env.do(http.MethodPatch, path(), map[string]any{"value_maps": nil, "unmapped": "", "payout_share": nil, "payout_field": ""})
		mustStatus(t, rec, http.StatusOK)
		if raw := stored(id); raw != nil {
			t.Fatalf("postback_rules = %s after removing every rule, want NULL", raw)
		}
	})

	for _, tt := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"share over 100", map[string]any{"payout_share": 101}, "payout_share"},
		{"share with three decimals", map[string]any{"payout_share": "7.125"}, "payout_share"},
		{"share zero", map[string]any{"payout_share": 0}, "payout_share"},
		{"unknown policy", map[string]any{"value_maps": maps, "unmapped": "drop"}, "unmapped"},
		{"bad field name", map[string]any{"value_maps": map[string]any{"1st": map[string]any{"a": "b"}}}, "value_maps"},
		{"not strings", map[string]any{"value_maps": map[string]any{"status": map[string]any{"a": 1}}}, "value_maps"},
		{"bad payout field", map[string]any{"payout_share": 50, "payout_field": "a b"}, "payout_field"},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", base("bad-"+tt.name, tt.extra)), http.StatusUnprocessableEntity, tt.field)
		})
	}
	t.Run("refused on a webhook", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": "wh", "kind": "webhook",
			"url": "https://hooks.rules.invalid/h", "value_maps": maps})
		mustError(t, rec, http.StatusUnprocessableEntity, "value_maps")
	})
}

// TestAPIPostbackBody: a POST postback's body template is accepted with
// its format (guessed from the template when not given) and signature
// choice, shown by GET, and refused at save when it is not a valid body
// once rendered with sample values, or without POST.
func TestAPIPostbackBody(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Bodies")
	base := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"partner_id": pid, "name": name, "kind": "postback", "method": "POST",
			"url": "https://t.bodies.invalid/pb"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	e := env.createEndpoint(base("json", map[string]any{"body_template": `{"cid": "{click_id}", "payout": {payout|0}}`, "body_signature": "webhook"}))
	if e.BodyFormat != "json" || e.BodySignature != "webhook" || e.Method != "POST" {
		t.Fatalf("saved %+v", e.rulesJSON)
	}
	e = env.createEndpoint(base("form", map[string]any{"body_template": `cid={click_id}&payout={payout}`}))
	if e.BodyFormat != "form" {
		t.Fatalf("form body saved as %q", e.BodyFormat)
	}
	rec := env.do(http.MethodPatch, "/api/v1/endpoints/"+strconv.FormatInt(e.ID, 10), map[string]any{"body_template": "", "body_format": ""})
	mustStatus(t, rec, http.StatusOK)
	if got := decodeBody[endpointJSON](t, rec); got.BodyTemplate != "" || got.BodyFormat != "" || got.Method != "POST" {
		t.Fatalf("after removing the body: %+v", got.rulesJSON)
	}
	for _, tt := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"invalid JSON once rendered", map[string]any{"body_template": `{"cid": "{click_id}",}`}, "body_template"},
		{"a bare macro as a key", map[string]any{"body_template": `{{click_id}: 1}`, "body_format": "json"}, "body_template"},
		{"unknown format", map[string]any{"body_template": `a={b}`, "body_format": "xml"}, "body_format"},
		{"unknown signature", map[string]any{"body_template": `a={b}`, "body_signature": "hmac"}, "body_signature"},
		{"signature without a body", map[string]any{"body_signature": "webhook"}, "body_signature"},
		{"a body on GET", map[string]any{"method": "GET", "body_template": `a={b}`}, "method"},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", base("bad-"+tt.name, tt.extra)), http.StatusUnprocessableEntity, tt.field)
		})
	}
}
