package web

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestCustomHeadersAreSealedAndWriteOnly: custom header values are stored
// sealed, never returned, kept by sending the mask back, and still reach
// the partner.
func TestCustomHeadersAreSealedAndWriteOnly(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	ctx := context.Background()
	var mu sync.Mutex
	var got []http.Header
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	pid := env.createPartner("Acme")
	e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": rcv.URL + "/in",
		"headers": map[string]string{"Authorization": "Bearer tok-123", "X-Account": "acct-42"}})
	masked := map[string]string{"Authorization": maskedValue, "X-Account": maskedValue}
	if !maps.Equal(e.Headers, masked) {
		t.Fatalf("create answered headers %v", e.Headers)
	}
	stored := func() (string, map[string]string) {
		t.Helper()
		var raw json.RawMessage
		if err := env.pool.QueryRow(ctx, "SELECT headers FROM endpoints WHERE id = $1", e.ID).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		plain, err := env.srv.box.OpenHeaders(e.ID, raw)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw), plain
	}
	raw, plain := stored()
	if strings.Contains(raw, "tok-123") || strings.Contains(raw, "acct-42") {
		t.Fatalf("header values stored in clear: %s", raw)
	}
	if plain["Authorization"] != "Bearer tok-123" {
		t.Fatalf("stored %v", plain)
	}
	rec := env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), nil)
	if strings.Contains(rec.Body.String(), "tok-123") || !strings.Contains(rec.Body.String(), maskedValue) {
		t.Fatalf("GET: %s", rec.Body.String())
	}

	// The mask keeps a value; a new value replaces it; a name left out
	// stays (PATCH merges).
	rec = env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), map[string]any{
		"headers": map[string]string{"authorization": maskedValue, "X-Account": "acct-43"}})
	mustStatus(t, rec, http.StatusOK)
	if _, plain = stored(); !maps.Equal(plain, map[string]string{"authorization": "Bearer tok-123", "X-Account": "acct-43"}) {
		t.Fatalf("after PATCH: %v", plain)
	}
	// null deletes a header; the others stay.
	mustStatus(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), map[string]any{
		"headers": map[string]any{"x-account": nil}}), http.StatusOK)
	if _, plain = stored(); !maps.Equal(plain, map[string]string{"authorization": "Bearer tok-123"}) {
		t.Fatalf("after deleting X-Account: %v", plain)
	}
	mustStatus(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), map[string]any{
		"headers": map[string]any{"X-Account": "acct-43"}}), http.StatusOK)
	// A mask for a header that has no stored value is refused, and nothing changes.
	rawBefore, _ := stored()
	mustError(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), map[string]any{
		"headers": map[string]string{"X-Unknown": maskedValue}}), http.StatusUnprocessableEntity, "headers")
	if rawAfter, _ := stored(); rawAfter != rawBefore {
		t.Fatal("a refused PATCH changed the headers")
	}
	mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": "other", "kind": "webhook",
		"url": rcv.URL, "headers": map[string]string{"Authorization": maskedValue}}), http.StatusUnprocessableEntity, "headers")

	// The audit log names headers only when a value changed.
	mustStatus(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", e.ID), map[string]any{"name": "orders-2"}), http.StatusOK)
	var changed string
	if err := env.pool.QueryRow(ctx, "SELECT details->>'changed' FROM audit_log WHERE action = 'endpoint.update' ORDER BY id DESC LIMIT 1").Scan(&changed); err != nil {
		t.Fatal(err)
	}
	if changed != `["name"]` {
		t.Fatalf("audit changed = %s, want only the name", changed)
	}

	// The dashboard's edit form shows masks, saving it as shown keeps the
	// values, and test fires (saved endpoint, edit form) send the real ones.
	op := env.signIn(env.server(), "op@example.com", "operator")
	_, doc := op.get(fmt.Sprintf("/endpoints/%d/edit", e.ID))
	text := doc.Find(`[name=headers]`).Text()
	if strings.Contains(text, "tok-123") || !strings.Contains(text, "X-Account: "+maskedValue) {
		t.Fatalf("edit form headers: %q", text)
	}
	form := endpointForm(map[string]string{"kind": "webhook", "name": "orders-2", "url": rcv.URL + "/in", "method": "POST", "headers": text,
		"enabled": "true", "endpoint_id": fmt.Sprint(e.ID)})
	res, _ := op.postForm(fmt.Sprintf("/endpoints/%d/edit", e.ID), form)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("save edit form: %d", res.StatusCode)
	}
	if _, plain = stored(); !maps.Equal(plain, map[string]string{"authorization": "Bearer tok-123", "X-Account": "acct-43"}) {
		t.Fatalf("after saving the form as shown: %v", plain)
	}
	_, fire := op.htmx(http.MethodPost, "/endpoints/test-fire", form)
	_, fire2 := op.htmx(http.MethodPost, fmt.Sprintf("/endpoints/%d/test", e.ID), url.Values{})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests; form fire: %s; page fire: %s", len(got), fire.Text(), fire2.Text())
	}
	for _, h := range got {
		if h.Get("Authorization") != "Bearer tok-123" || h.Get("X-Account") != "acct-43" {
			t.Fatalf("test fire sent %v", h)
		}
	}
}
