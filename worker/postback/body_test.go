package postback

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestBodyRender(t *testing.T) {
	const payload = `{"click_id":"abc \"1\"&x=2","payout":12.50,"status":"approved","user":{"country":"DE"},"flag":true,"num_text":"007"}`
	tests := []struct {
		name, format, tmpl, want string
		rules                    *Rules
	}{
		{"json strings and bare values", BodyJSON, `{"cid": "{click_id}", "payout": {payout}, "geo": "{user.country}", "ok": {flag}}`,
			`{"cid": "abc \"1\"\u0026x=2", "payout": 12.50, "geo": "DE", "ok": true}`, nil},
		{"bare non-number becomes a string", BodyJSON, `{"s": {status}, "n": {num_text}}`, `{"s": "approved", "n": "007"}`, nil},
		{"defaults and maps", BodyJSON, `{"s": "{status}", "sub": "{sub2|}", "p": {payout}}`, `{"s": "sale", "sub": "", "p": 8.75}`,
			&Rules{ValueMaps: map[string]map[string]string{"status": {"approved": "sale"}}, PayoutShareBP: 7000}},
		{"json braces are text", BodyJSON, `{"a": {}, "b": [{"c": "{status}"}]}`, `{"a": {}, "b": [{"c": "approved"}]}`, nil},
		{"form", BodyForm, `cid={click_id}&payout={payout}&s={status}`, `cid=abc+%221%22%26x%3D2&payout=12.50&s=approved`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBody(tt.tmpl, tt.format, StyleBraces)
			if err != nil {
				t.Fatal(err)
			}
			fields, _ := PayloadFields([]byte(payload))
			got, err := b.Render(Values{Payload: fields}, tt.rules)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Render = %s, %v\nwant      %s", got, err, tt.want)
			}
			if tt.format == BodyJSON && !json.Valid(got) {
				t.Fatalf("invalid JSON %s", got)
			}
			if tt.format == BodyForm {
				q, err := url.ParseQuery(string(got))
				if err != nil || q.Get("cid") != `abc "1"&x=2` {
					t.Fatalf("form decodes to %v, %v", q, err)
				}
			}
		})
	}
	t.Run("missing field", func(t *testing.T) {
		b, _ := ParseBody(`{"x": "{nope}"}`, BodyJSON, StyleBraces)
		if _, err := b.Render(Values{}, nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("hash style", func(t *testing.T) {
		b, err := ParseBody(`{"cid": "#click_id#", "tag": "#1 not a macro"}`, BodyJSON, StyleHash)
		if err != nil {
			t.Fatal(err)
		}
		fields, _ := PayloadFields([]byte(payload))
		got, _ := b.Render(Values{Payload: fields}, nil)
		if !strings.HasPrefix(string(got), `{"cid": "abc \"1\"`) || b.ContentType() != "application/json" {
			t.Fatalf("got %s", got)
		}
	})
}

func TestBodyLint(t *testing.T) {
	for _, tt := range []struct{ name, format, tmpl, want string }{
		{"invalid JSON", BodyJSON, `{"cid": "{click_id}",}`, "not valid JSON once rendered with sample values"},
		{"unquoted text", BodyJSON, `{"cid": click}`, "not valid JSON"},
		{"macro as a key left bare", BodyJSON, `{{click_id}: 1}`, "not valid JSON"},
		{"bad form escape", BodyForm, `a=%zz&b={v}`, "not a valid form"},
		{"empty", BodyJSON, ` `, "empty"},
		{"format", "xml", `<a/>`, "not \"form\" or \"json\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseBody(tt.tmpl, tt.format, StyleBraces); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseBody = %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzBody checks that whatever the payload holds, a body template that
// passed the lint renders to a valid body whose string values decode back.
func FuzzBody(f *testing.F) {
	f.Add(`{"cid": "{v}", "n": {v}, "d": "{w|x}"}`, "abc\"\\\n</script>")
	f.Add(`a={v}&b={v}`, "x&y=z +%")
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		for _, format := range []string{BodyJSON, BodyForm} {
			b, err := ParseBody(tmpl, format, StyleBraces)
			if err != nil {
				continue
			}
			raw, _ := json.Marshal(value)
			fields := map[string]json.RawMessage{}
			for _, m := range b.Macros() {
				fields[m] = raw
			}
			got, err := b.Render(Values{Payload: fields}, nil)
			if err != nil {
				t.Fatalf("Render of a linted body: %v", err)
			}
			if format == BodyJSON && !json.Valid(got) {
				t.Fatalf("template %q with %q rendered invalid JSON %s", tmpl, value, got)
			}
			if format == BodyForm {
				if _, err := url.ParseQuery(string(got)); err != nil {
					t.Fatalf("template %q with %q rendered an invalid form %s: %v", tmpl, value, got, err)
				}
			}
		}
	})
}
