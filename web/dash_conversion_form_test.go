package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestEndpointFormConversions: the form saves fire_on change with its key
// and status fields, shows them on the edit form, keeps them through an
// edit, and names the field of a change without a key.
func TestEndpointFormConversions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")
	tmpl := "https://t.acme.invalid/postback?subid={click_id}&status={status}"
	form := endpointForm(map[string]string{"name": "keitaro", "url": tmpl, "macro_style": "braces",
		"fire_on": "change", "conversion_key": "click_id, goal", "conversion_status": "status", "conversion_days": "30"})
	res, doc := op.postForm(fmt.Sprintf("/partners/%d/endpoints", pid), form)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	health, _ := testid(doc, "created-health-link").Attr("href")
	_, doc = op.get(health + "/edit")
	if v, _ := doc.Find(`[name=conversion_key]`).Attr("value"); v != "click_id, goal" {
		t.Fatalf("edit form conversion_key %q", v)
	}
	if v, _ := doc.Find(`select[name=fire_on] option[selected]`).Attr("value"); v != "change" {
		t.Fatalf("edit form fire_on %q", v)
	}
	edit := endpointForm(map[string]string{"name": "keitaro-2", "url": tmpl, "macro_style": "braces", "enabled": "true",
		"fire_on": "change", "conversion_key": "click_id, goal", "conversion_status": "status", "conversion_days": "30"})
	if res, doc := op.postForm(health+"/edit", edit); res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	got := decodeBody[endpointJSON](t, env.do(http.MethodGet, "/api/v1/endpoints/"+strings.TrimPrefix(health, "/endpoints/"), nil))
	if got.FireOn != "change" || strings.Join(got.ConversionKey, ",") != "click_id,goal" || got.ConversionStatus != "status" || got.ConversionDays != 30 {
		t.Fatalf("after the edit: %+v", got.rulesJSON)
	}
	bad := endpointForm(map[string]string{"name": "bad", "url": tmpl, "fire_on": "change", "conversion_status": "status"})
	res, doc = op.postForm(fmt.Sprintf("/partners/%d/endpoints", pid), bad)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testid(doc, "form-errors").Text(), "Conversion key") {
		t.Fatalf("change without a key: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}
	// The API answers a plain endpoint with the defaults: every event.
	plain := env.createEndpoint(map[string]any{"partner_id": pid, "name": "plain", "kind": "postback", "method": "GET", "url": tmpl})
	if plain.FireOn != "every" || len(plain.ConversionKey) != 0 || plain.ConversionDays != 90 {
		t.Errorf("plain endpoint: %+v", plain.rulesJSON)
	}
}
