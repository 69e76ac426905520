package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/request"
)

type savedEndpoint struct {
	endpointJSON
	Warnings []fieldWarning `json:"warnings"`
}

func warningCodes(ws []fieldWarning) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Field+":"+w.Code)
	}
	return strings.Join(out, " ")
}

// TestAPIMacroStyles: the same #click_id# template saves clean in hash
// style and with a foreign_token warning in braces style; neither blocks
// saving. Warnings never stop a save; errors are 422s naming their field.
func TestAPIMacroStyles(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Clickwave")
	tmpl := "https://t.clickwave.invalid/p.ashx?r=#click_id#&t=#transaction_id#"
	create := func(fields map[string]any) *savedEndpoint {
		t.Helper()
		base := map[string]any{"partner_id": pid, "kind": "postback", "url": tmpl}
		for k, v := range fields {
			base[k] = v
		}
		rec := env.do(http.MethodPost, "/api/v1/endpoints", base)
		mustStatus(t, rec, http.StatusCreated)
		v := decodeBody[savedEndpoint](t, rec)
		return &v
	}

	t.Run("hash style saves without warnings", func(t *testing.T) {
		v := create(map[string]any{"name": "cake", "macro_style": "hash"})
		if v.MacroStyle != "hash" || v.Warnings == nil || len(v.Warnings) != 0 {
			t.Fatalf("macro_style %q, warnings %+v", v.MacroStyle, v.Warnings)
		}
	})
	t.Run("braces style saves with a warning", func(t *testing.T) {
		v := create(map[string]any{"name": "braces"})
		if v.MacroStyle != "braces" {
			t.Fatalf("default macro_style = %q", v.MacroStyle)
		}
		if got := warningCodes(v.Warnings); got != "url:foreign_token url:foreign_token" {
			t.Fatalf("warnings = %s (%+v)", got, v.Warnings)
		}
		if !strings.Contains(v.Warnings[0].Message, `"#click_id#"`) || !strings.Contains(v.Warnings[0].Message, "hash") {
			t.Fatalf("message = %q", v.Warnings[0].Message)
		}
		// GET shows the endpoint without warnings; PATCH to hash clears them.
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", v.ID), map[string]any{"macro_style": "hash"})
		mustStatus(t, rec, http.StatusOK)
		if p := decodeBody[savedEndpoint](t, rec); p.MacroStyle != "hash" || p.Warnings == nil || len(p.Warnings) != 0 {
			t.Fatalf("after PATCH: style %q, warnings %+v", p.MacroStyle, p.Warnings)
		}
	})
	t.Run("a preset sets the style", func(t *testing.T) {
		v := create(map[string]any{"name": "cake preset", "preset": "cake"})
		if v.MacroStyle != "hash" || v.Preset != "cake" || len(v.Warnings) != 0 {
			t.Fatalf("style %q preset %q warnings %+v", v.MacroStyle, v.Preset, v.Warnings)
		}
	})
	t.Run("a preset's required parameter missing warns", func(t *testing.T) {
		v := create(map[string]any{"name": "voluum", "preset": "voluum", "url": "https://t.clickwave.invalid/postback?click={click_id}"})
		if got := warningCodes(v.Warnings); got != "url:preset_param_missing" || !strings.Contains(v.Warnings[0].Message, `"cid"`) {
			t.Fatalf("warnings = %+v", v.Warnings)
		}
		// PATCH keeps the stored preset, so the warning stays until fixed.
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", v.ID), map[string]any{"name": "voluum 2"})
		mustStatus(t, rec, http.StatusOK)
		if p := decodeBody[savedEndpoint](t, rec); warningCodes(p.Warnings) != "url:preset_param_missing" {
			t.Fatalf("after PATCH: %+v", p.Warnings)
		}
	})
	t.Run("errors name their field", func(t *testing.T) {
		cases := []struct {
			name, field string
			fields      map[string]any
		}{
			{"unknown style", "macro_style", map[string]any{"macro_style": "percent"}},
			{"unbalanced hash", "url", map[string]any{"macro_style": "hash", "url": "https://t.clickwave.invalid/pb?cid=#click_id"}},
			{"unsafe signature parameter", "signature_param", map[string]any{"signature_param": "s ig"}},
			{"signature parameter ts", "signature_param", map[string]any{"signature_param": "ts"}},
			{"signature parameter in the template", "signature_param", map[string]any{"signature_param": "t", "macro_style": "hash"}},
			{"unknown preset", "preset", map[string]any{"preset": "nope"}},
			{"signed with user info", "signature_param", map[string]any{"signature_param": "sig", "macro_style": "hash", "url": "https://u:p@t.clickwave.invalid/pb?cid=#click_id#"}},
			{"signed with a fragment", "signature_param", map[string]any{"signature_param": "sig", "url": "https://t.clickwave.invalid/pb?cid={click_id}#top"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body := map[string]any{"partner_id": pid, "kind": "postback", "name": "bad " + c.name, "url": tmpl}
				for k, v := range c.fields {
					body[k] = v
				}
				mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", body), http.StatusUnprocessableEntity, c.field)
			})
		}
		mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "kind": "webhook", "name": "wh",
			"url": "https://hooks.clickwave.invalid/in", "signature_param": "sig"}), http.StatusUnprocessableEntity, "signature_param")
	})
}

// TestAPIUnknownMacroWarning: a macro that none of the last events of the
// endpoint's types carries is a warning; a field they carry is not.
func TestAPIUnknownMacroWarning(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Clickwave")
	body := map[string]any{"partner_id": pid, "kind": "postback", "name": "first", "event_types": []string{"conversion.*"},
		"url": "https://t.clickwave.invalid/pb?cid={clik_id}&p={payout}"}
	rec := env.do(http.MethodPost, "/api/v1/endpoints", body)
	mustStatus(t, rec, http.StatusCreated)
	if v := decodeBody[savedEndpoint](t, rec); len(v.Warnings) != 0 {
		t.Fatalf("no events yet, but warnings %+v", v.Warnings)
	}
	mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"click_id": "c1", "payout": 1}}), http.StatusAccepted)
	mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "signup", "payload": map[string]any{"clik_id": "c1"}}), http.StatusAccepted)
	body["name"] = "second"
	rec = env.do(http.MethodPost, "/api/v1/endpoints", body)
	mustStatus(t, rec, http.StatusCreated)
	v := decodeBody[savedEndpoint](t, rec)
	if got := warningCodes(v.Warnings); got != "url:unknown_macro" {
		t.Fatalf("warnings = %+v", v.Warnings)
	}
	if m := v.Warnings[0].Message; !strings.Contains(m, `"clik_id"`) || !strings.Contains(m, "conversion.*") || !strings.Contains(m, "click_id") {
		t.Fatalf("message = %q", m)
	}
}

// TestSignedPostbackRequestViews: the request the event log and the test
// fire show for a signed postback is built by worker/request with the
// endpoint's secret: the exact URL verifies with the documented scheme
// (computed here, not by the production code), the redacted view and its
// curl show neither the signature nor the secret.
func TestSignedPostbackRequestViews(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Clickwave")
	rec := env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "kind": "postback", "name": "signed",
		"url": "https://t.clickwave.invalid/pb?cid={click_id}", "signature_param": "sig"})
	mustStatus(t, rec, http.StatusCreated)
	v := decodeBody[savedEndpoint](t, rec)
	if v.SignatureParam != "sig" || !strings.HasPrefix(v.Secret, "whsec_") {
		t.Fatalf("signature_param %q, secret %q", v.SignatureParam, v.Secret)
	}
	cfg, keys, err := env.srv.savedTestFireConfig(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_760_000_000, 0)
	req, err := testFireRequest(cfg, keys, request.Event{ID: "e1", Type: "conversion", Payload: []byte(`{"click_id":"clk-77"}`), Attempt: 1}, at)
	if err != nil {
		t.Fatal(err)
	}
	exact := req.Exact("hookline/test")
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(v.Secret, "whsec_"))
	signed := "https://t.clickwave.invalid/pb?cid=clk-77&ts=1760000000"
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	sig := hex.EncodeToString(mac.Sum(nil))
	if exact.URL != signed+"&sig="+sig {
		t.Fatalf("exact URL %s, want %s&sig=%s", exact.URL, signed, sig)
	}
	red := req.Redacted("hookline/test")
	for _, text := range []string{red.String(), red.Curl()} {
		if strings.Contains(text, sig) || strings.Contains(text, v.Secret) || strings.Contains(text, "clk-77") {
			t.Fatalf("redacted view leaks: %s", text)
		}
	}
	if u, _ := url.Parse(red.URL); u.Query().Get("ts") != "1760000000" || u.Query().Get("sig") != "***" {
		t.Fatalf("redacted URL %s", red.URL)
	}
}
