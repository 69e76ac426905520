package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEndpointFormMacroStyles: the form offers the macro style (a preset
// sets it), shows the save-time warnings under the URL field as the
// template is typed and on the page after saving, and never blocks a save
// for a warning.
func TestEndpointFormMacroStyles(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Clickwave")
	op := env.signIn(base, "op@example.com", "operator")

	_, doc := op.get(fmt.Sprintf("/partners/%d/endpoints/new?kind=postback&preset=cake", pid))
	if v, _ := doc.Find(`select[name=macro_style] option[selected]`).Attr("value"); v != "hash" {
		t.Fatalf("the CAKE preset selects macro style %q", v)
	}
	if tmpl, _ := doc.Find(`[name=url]`).Attr("value"); !strings.Contains(tmpl, "r=#click_id#") {
		t.Fatalf("CAKE template %q", tmpl)
	}
	if testid(doc, "url-warnings").Length() != 0 {
		t.Fatalf("the preset itself warns: %s", testid(doc, "url-warnings").Text())
	}

	tmpl := "https://t.clickwave.invalid/pb?cid=#click_id#"
	_, prev := op.htmx(http.MethodPost, "/endpoints/preview", url.Values{"url": {tmpl}, "macro_style": {"braces"}})
	if w := prev.Find(`[data-testid=url-warning][data-code=foreign_token]`); w.Length() != 1 || !strings.Contains(w.Text(), "#click_id#") {
		t.Fatalf("braces preview warnings: %s", prev.Text())
	}
	_, prev = op.htmx(http.MethodPost, "/endpoints/preview", url.Values{"url": {tmpl}, "macro_style": {"hash"}})
	if testid(prev, "url-warnings").Length() != 0 || !strings.Contains(testid(prev, "preview-url").Text(), "cid=abc%20123%26x%3D1") {
		t.Fatalf("hash preview: %s", prev.Text())
	}

	path := fmt.Sprintf("/partners/%d/endpoints", pid)
	res, doc := op.postForm(path, endpointForm(map[string]string{"name": "braces", "url": tmpl, "macro_style": "braces"}))
	if res.StatusCode != http.StatusCreated || testid(doc, "url-warnings").Length() != 1 {
		t.Fatalf("create with a warning: %d %s", res.StatusCode, doc.Text())
	}
	res, doc = op.postForm(path, endpointForm(map[string]string{"name": "signed", "url": tmpl, "macro_style": "hash", "signature_param": "s2g"}))
	if res.StatusCode != http.StatusCreated || testid(doc, "url-warnings").Length() != 0 {
		t.Fatalf("create signed: %d %s", res.StatusCode, doc.Text())
	}
	if !strings.Contains(testid(doc, "endpoint-created").Text(), "&s2g=") {
		t.Fatalf("the created page does not explain the signature: %s", testid(doc, "endpoint-created").Text())
	}
	secret := strings.TrimSpace(doc.Find("#created-secret").Text())
	if len(secret) < 20 {
		t.Fatalf("no secret on the created page: %q", secret)
	}
	health, _ := testid(doc, "created-health-link").Attr("href")
	_, doc = op.get(health)
	panel := testid(doc, "signed-postback")
	for _, lang := range []string{"verify-node", "verify-python", "verify-php"} {
		if s := testid(doc, lang).Text(); !strings.Contains(s, `&s2g=`) || strings.Contains(s, "&sig=") {
			t.Fatalf("%s snippet: %q", lang, s)
		}
	}
	if panel.Length() != 1 || strings.Contains(doc.Text(), secret) {
		t.Fatal("no verification panel, or the page shows the secret")
	}
	_, doc = op.get(health + "/edit")
	if v, _ := doc.Find(`[name=signature_param]`).Attr("value"); v != "s2g" {
		t.Fatalf("edit form signature_param %q", v)
	}
	if v, _ := doc.Find(`select[name=macro_style] option[selected]`).Attr("value"); v != "hash" {
		t.Fatalf("edit form macro_style %q", v)
	}

	res, doc = op.postForm(path, endpointForm(map[string]string{"name": "bad", "url": tmpl, "macro_style": "hash", "signature_param": "ts"}))
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(testid(doc, "form-errors").Text(), "Signature parameter") {
		t.Fatalf("signature parameter ts: %d %s", res.StatusCode, testid(doc, "form-errors").Text())
	}

	// An unsigned postback's page has no verification panel.
	_, doc = op.get(fmt.Sprintf("/endpoints/%d", env.endpointID(t, "braces")))
	if testid(doc, "signed-postback").Length() != 0 {
		t.Fatal("an unsigned postback shows the verification panel")
	}
}

func (e *testEnv) endpointID(t *testing.T, name string) int64 {
	t.Helper()
	var id int64
	if err := e.pool.QueryRow(t.Context(), "SELECT id FROM endpoints WHERE name = $1", name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEndpointEditWarningFlash: saving an edit whose template warns saves,
// and says so on the endpoint page.
func TestEndpointEditWarningFlash(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Clickwave")
	e := env.createEndpoint(map[string]any{"partner_id": pid, "kind": "postback", "name": "pb", "url": "https://t.clickwave.invalid/pb?cid={click_id}"})
	op := env.signIn(base, "op@example.com", "operator")
	res, doc := op.postForm(fmt.Sprintf("/endpoints/%d/edit", e.ID), endpointForm(map[string]string{"name": "pb", "url": "https://t.clickwave.invalid/pb?cid={click_id}&s2=[SUBID]", "enabled": "true"}))
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "Endpoint saved, with 1 warning(s)") || !strings.Contains(doc.Text(), "[SUBID]") {
		t.Fatalf("after saving: %d %s", res.StatusCode, doc.Find("main").Text())
	}
	var stored string
	if err := env.pool.QueryRow(t.Context(), "SELECT url FROM endpoints WHERE id = $1", e.ID).Scan(&stored); err != nil || !strings.HasSuffix(stored, "[SUBID]") {
		t.Fatalf("stored url %q (%v)", stored, err)
	}
}
