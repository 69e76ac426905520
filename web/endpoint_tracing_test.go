package web

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestEndpointSendTraceparent: send_traceparent is off by default, set by
// POST and PATCH, kept by a PATCH without it and by the edit form's other
// changes, set by the form's checkbox, and every change is in the audit
// log.
func TestEndpointSendTraceparent(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Traced Partner")
	ctx := context.Background()
	lastChanged := func() string {
		t.Helper()
		var changed string
		if err := env.pool.QueryRow(ctx, "SELECT details->>'changed' FROM audit_log WHERE action = 'endpoint.update' ORDER BY id DESC LIMIT 1").Scan(&changed); err != nil {
			t.Fatal(err)
		}
		return changed
	}
	stored := func(id int64) bool {
		t.Helper()
		var on bool
		if err := env.pool.QueryRow(ctx, "SELECT send_traceparent FROM endpoints WHERE id = $1", id).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}

	rec := env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{
		"partner_id": pid, "name": "plain", "kind": "webhook", "url": "https://hooks.partner.invalid/in"})
	mustStatus(t, rec, http.StatusCreated)
	if v := decodeBody[savedEndpoint](t, rec); v.SendTraceparent {
		t.Fatal("send_traceparent on by default")
	}

	rec = env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{
		"partner_id": pid, "name": "traced", "kind": "webhook", "url": "https://hooks.partner.invalid/in", "send_traceparent": true})
	mustStatus(t, rec, http.StatusCreated)
	v := decodeBody[savedEndpoint](t, rec)
	if !v.SendTraceparent || !stored(v.ID) {
		t.Fatalf("created with send_traceparent: %+v", v.endpointJSON)
	}
	path := fmt.Sprintf("/api/v1/endpoints/%d", v.ID)
	mustStatus(t, env.do(http.MethodPatch, path, map[string]any{"name": "traced-2"}), http.StatusOK)
	if !stored(v.ID) || lastChanged() != `["name"]` {
		t.Fatalf("a PATCH without the field changed it (stored %v, audit %s)", stored(v.ID), lastChanged())
	}
	rec = env.do(http.MethodPatch, path, map[string]any{"send_traceparent": false})
	mustStatus(t, rec, http.StatusOK)
	if decodeBody[savedEndpoint](t, rec).SendTraceparent || stored(v.ID) || lastChanged() != `["send_traceparent"]` {
		t.Fatalf("PATCH false: stored %v, audit %s", stored(v.ID), lastChanged())
	}
	mustError(t, env.do(http.MethodPatch, path, map[string]any{"send_traceparent": "yes"}), http.StatusUnprocessableEntity, "send_traceparent")
	if rec := env.do(http.MethodGet, path, nil); decodeBody[endpointJSON](t, rec).SendTraceparent {
		t.Fatal("GET shows send_traceparent on")
	}

	// The edit form shows the checkbox and saves it.
	op := env.signIn(env.server(), "op@example.com", "operator")
	_, doc := op.get(fmt.Sprintf("/endpoints/%d/edit", v.ID))
	box := doc.Find(`input[name=send_traceparent][type=checkbox]`)
	if box.Length() != 1 || box.AttrOr("checked", "none") != "none" {
		t.Fatalf("edit form checkbox: %d found, checked %q", box.Length(), box.AttrOr("checked", "none"))
	}
	form := endpointForm(map[string]string{"kind": "webhook", "name": "traced-2", "url": "https://hooks.partner.invalid/in", "method": "POST",
		"enabled": "true", "send_traceparent": "true", "endpoint_id": fmt.Sprint(v.ID)})
	if res, _ := op.postForm(fmt.Sprintf("/endpoints/%d/edit", v.ID), form); res.StatusCode != http.StatusOK {
		t.Fatalf("save edit form: %d", res.StatusCode)
	}
	if !stored(v.ID) || lastChanged() != `["send_traceparent"]` {
		t.Fatalf("form: stored %v, audit %s", stored(v.ID), lastChanged())
	}
	_, doc = op.get(fmt.Sprintf("/endpoints/%d/edit", v.ID))
	if _, checked := doc.Find(`input[name=send_traceparent]`).Attr("checked"); !checked {
		t.Fatal("the edit form does not show send_traceparent checked")
	}
}
