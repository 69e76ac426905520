package postback

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// renderWith renders tmpl with built-ins filled and the given payload JSON.
func renderWith(t *testing.T, tmpl, payload string) (string, error) {
	t.Helper()
	fields, err := PayloadFields([]byte(payload))
	if err != nil {
		t.Fatalf("PayloadFields(%s): %v", payload, err)
	}
	v := Values{
		EventID:   "01890a5d-ac96-774b-bcce-b302099a8057",
		EventType: "conversion.approved",
		Timestamp: time.Unix(1_760_000_000, 999_000_000),
		Attempt:   3,
		Payload:   fields,
	}
	return mustParse(t, tmpl).Render(v)
}

func TestRenderEncoding(t *testing.T) {
	const q = "https://t.example/pb?v={v}"
	tests := []struct {
		name    string
		tmpl    string
		payload string
		want    string
	}{
		// strings: every byte outside ALPHA DIGIT - . _ ~ becomes %XX
		{"space", q, `{"v":"a b"}`, "https://t.example/pb?v=a%20b"},
		{"ampersand", q, `{"v":"a&b"}`, "https://t.example/pb?v=a%26b"},
		{"equals", q, `{"v":"a=b"}`, "https://t.example/pb?v=a%3Db"},
		{"slash", q, `{"v":"a/b"}`, "https://t.example/pb?v=a%2Fb"},
		{"plus", q, `{"v":"a+b"}`, "https://t.example/pb?v=a%2Bb"},
		{"question mark", q, `{"v":"a?b"}`, "https://t.example/pb?v=a%3Fb"},
		{"hash", q, `{"v":"a#b"}`, "https://t.example/pb?v=a%23b"},
		{"percent", q, `{"v":"100%"}`, "https://t.example/pb?v=100%25"},
		{"already encoded text is encoded again", q, `{"v":"a%20b"}`, "https://t.example/pb?v=a%2520b"},
		{"braces", q, `{"v":"{click_id}"}`, "https://t.example/pb?v=%7Bclick_id%7D"},
		{"at and colon", q, `{"v":"u@h:1"}`, "https://t.example/pb?v=u%40h%3A1"},
		{"unreserved kept", q, `{"v":"Az09-._~"}`, "https://t.example/pb?v=Az09-._~"},
		{"unicode", q, `{"v":"São Paulo"}`, "https://t.example/pb?v=S%C3%A3o%20Paulo"},
		{"emoji", q, `{"v":"🎉"}`, "https://t.example/pb?v=%F0%9F%8E%89"},
		{"JSON escapes decoded first", q, `{"v":"a\"b\\c\u00e9\n"}`, "https://t.example/pb?v=a%22b%5Cc%C3%A9%0A"},
		{"empty string", q, `{"v":""}`, "https://t.example/pb?v="},
		{"sample click id", q, `{"v":"abc 123&x=1"}`, "https://t.example/pb?v=abc%20123%26x%3D1"},

		// numbers keep their JSON text
		{"integer", q, `{"v":42}`, "https://t.example/pb?v=42"},
		{"decimal keeps trailing zero", q, `{"v":12.50}`, "https://t.example/pb?v=12.50"},
		{"negative", q, `{"v":-3.5}`, "https://t.example/pb?v=-3.5"},
		{"exponent", q, `{"v":1e3}`, "https://t.example/pb?v=1e3"},
		{"signed exponent", q, `{"v":1E+3}`, "https://t.example/pb?v=1E%2B3"},
		{"large integer is not rounded", q, `{"v":12345678901234567890}`, "https://t.example/pb?v=12345678901234567890"},
		{"number with surrounding whitespace", q, `{"v":  7  }`, "https://t.example/pb?v=7"},

		// booleans
		{"true", q, `{"v":true}`, "https://t.example/pb?v=true"},
		{"false", q, `{"v":false}`, "https://t.example/pb?v=false"},

		// positions: one rule everywhere, literal text untouched
		{"path segment", "https://t.example/c/{v}/x", `{"v":"a/b c"}`, "https://t.example/c/a%2Fb%20c/x"},
		{"part of a path segment", "https://t.example/c/id-{v}.gif", `{"v":"7?"}`, "https://t.example/c/id-7%3F.gif"},
		{"query key", "https://t.example/pb?{v}=1", `{"v":"k&x=y"}`, "https://t.example/pb?k%26x%3Dy=1"},
		{"query value", "https://t.example/pb?a=1&v={v}&b=2", `{"v":"x&b=3"}`, "https://t.example/pb?a=1&v=x%26b%3D3&b=2"},
		{"fragment", "https://t.example/pb#{v}", `{"v":"a#b c"}`, "https://t.example/pb#a%23b%20c"},
		{"literal escapes untouched", "https://t.example/a%20b?x=%2F&v={v}", `{"v":"/"}`, "https://t.example/a%20b?x=%2F&v=%2F"},
		{"repeated macro", "https://t.example/{v}?a={v}&b={v}#{v}", `{"v":"a b"}`, "https://t.example/a%20b?a=a%20b&b=a%20b#a%20b"},
		{"adjacent macros", "https://t.example/pb?x={a}{b}", `{"a":"1","b":"&"}`, "https://t.example/pb?x=1%26"},
		{"unused payload fields ignored", q, `{"v":"1","other":{"deep":true}}`, "https://t.example/pb?v=1"},

		// built-ins
		{"event id", "https://t.example/pb?e={event_id}", `{}`, "https://t.example/pb?e=01890a5d-ac96-774b-bcce-b302099a8057"},
		{"event type", "https://t.example/pb?t={event_type}", `{}`, "https://t.example/pb?t=conversion.approved"},
		{"timestamp in unix seconds", "https://t.example/pb?ts={timestamp}", `{}`, "https://t.example/pb?ts=1760000000"},
		{"attempt", "https://t.example/pb?n={attempt}", `{}`, "https://t.example/pb?n=3"},
		{"built-in beats payload field", "https://t.example/pb?n={attempt}", `{"attempt":"forged"}`, "https://t.example/pb?n=3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderWith(t, tt.tmpl, tt.payload)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Render = %q\nwant     %q", got, tt.want)
			}
		})
	}
}

func TestRenderMissingField(t *testing.T) {
	const tmpl = "https://t.example/pb?a={present}&cid={click_id}&b={other}"
	tests := []struct {
		name      string
		payload   string
		wantField string
		wantFound string
		wantMsg   string
	}{
		{"absent", `{"present":1}`, "click_id", "", `payload has no field "click_id" required by the postback template`},
		{"null", `{"present":1,"click_id":null}`, "click_id", "null", `payload field "click_id" required by the postback template is null, not a string, number or boolean`},
		{"object", `{"present":1,"click_id":{"id":"x"}}`, "click_id", "an object", `payload field "click_id" required by the postback template is an object, not a string, number or boolean`},
		{"array", `{"present":1,"click_id":["x"]}`, "click_id", "an array", `payload field "click_id" required by the postback template is an array, not a string, number or boolean`},
		{"first missing in template order", `{}`, "present", "", `payload has no field "present" required by the postback template`},
		{"field names are case-sensitive", `{"present":1,"Click_ID":"x"}`, "click_id", "", `payload has no field "click_id" required by the postback template`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderWith(t, tmpl, tt.payload)
			if got != "" {
				t.Errorf("Render returned %q alongside an error", got)
			}
			var missing *MissingFieldError
			if !errors.As(err, &missing) {
				t.Fatalf("err = %v (%T), want *MissingFieldError", err, err)
			}
			if missing.Field != tt.wantField || missing.Found != tt.wantFound {
				t.Errorf("MissingFieldError = %+v, want Field %q Found %q", *missing, tt.wantField, tt.wantFound)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("Error() = %q\nwant      %q", err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestRenderInvalidRawPayload(t *testing.T) {
	// Callers may build Values by hand; bad raw JSON must not be sent.
	tmpl := mustParse(t, "https://t.example/pb?v={v}")
	_, err := tmpl.Render(Values{Payload: map[string]json.RawMessage{"v": json.RawMessage(`12abc`)}})
	var missing *MissingFieldError
	if !errors.As(err, &missing) || missing.Found != "invalid JSON" {
		t.Fatalf("err = %v, want MissingFieldError with Found %q", err, "invalid JSON")
	}
}

func TestRenderUnsetBuiltin(t *testing.T) {
	full := Values{EventID: "e", EventType: "t", Timestamp: time.Unix(1, 0), Attempt: 1}
	tests := []struct {
		name  string
		macro string
		unset func(*Values)
	}{
		{"event_id", "event_id", func(v *Values) { v.EventID = "" }},
		{"event_type", "event_type", func(v *Values) { v.EventType = "" }},
		{"timestamp", "timestamp", func(v *Values) { v.Timestamp = time.Time{} }},
		{"attempt", "attempt", func(v *Values) { v.Attempt = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := mustParse(t, "https://t.example/pb?x={"+tt.macro+"}")
			v := full
			tt.unset(&v)
			_, err := tmpl.Render(v)
			if err == nil {
				t.Fatal("Render succeeded with an unset built-in")
			}
			var missing *MissingFieldError
			if errors.As(err, &missing) {
				t.Fatalf("unset built-in reported as a payload problem: %v", err)
			}
			if !strings.Contains(err.Error(), "{"+tt.macro+"}") {
				t.Errorf("error %q does not name the built-in", err)
			}
		})
	}
}

func TestPayloadFields(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    map[string]string
		wantErr bool
	}{
		{"object", `{"a":"x","n":12.50,"b":true,"z":null,"o":{"k":1},"l":[1]}`,
			map[string]string{"a": `"x"`, "n": `12.50`, "b": `true`, "z": `null`, "o": `{"k":1}`, "l": `[1]`}, false},
		{"surrounding whitespace", " \n{\"a\":1}\n", map[string]string{"a": "1"}, false},
		{"empty object", `{}`, map[string]string{}, false},
		{"empty", ``, nil, true},
		{"null", `null`, nil, true},
		{"array", `[{"a":1}]`, nil, true},
		{"string", `"a"`, nil, true},
		{"truncated", `{"a":`, nil, true},
		{"trailing data", `{"a":1} {}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PayloadFields([]byte(tt.payload))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("PayloadFields(%q) = %v, want error", tt.payload, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotText := make(map[string]string, len(got))
			for k, v := range got {
				gotText[k] = string(v)
			}
			if !reflect.DeepEqual(gotText, tt.want) {
				t.Fatalf("PayloadFields = %v, want %v", gotText, tt.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	tmpl := mustParse(t, "https://t.example/pb?cid={click_id}&p={payout}&z={gone}&o={obj}&n={attempt}&c={click_id}")
	v := Values{
		EventID: "e", EventType: "t", Timestamp: time.Unix(1, 0), Attempt: 2,
		Payload: map[string]json.RawMessage{
			"click_id": json.RawMessage(`"a b"`),
			"payout":   json.RawMessage(`12.50`),
			"obj":      json.RawMessage(`{"x":1}`),
		},
	}
	want := []Segment{
		{Text: "https://t.example/pb?cid="},
		{Text: "a%20b", Macro: "click_id", Known: true},
		{Text: "&p="},
		{Text: "12.50", Macro: "payout", Known: true},
		{Text: "&z="},
		{Text: "{gone}", Macro: "gone", Missing: true},
		{Text: "&o="},
		{Text: "{obj}", Macro: "obj", Known: true, Missing: true},
		{Text: "&n="},
		{Text: "2", Macro: "attempt", Known: true},
		{Text: "&c="},
		{Text: "a%20b", Macro: "click_id", Known: true},
	}
	got := tmpl.Preview(v)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Preview =\n%+v\nwant\n%+v", got, want)
	}

	t.Run("built-ins are known even without values", func(t *testing.T) {
		segs := mustParse(t, "https://t.example/pb?ts={timestamp}").Preview(Values{})
		last := segs[len(segs)-1]
		if !last.Known || !last.Missing || last.Text != "{timestamp}" {
			t.Fatalf("segment = %+v, want Known and Missing with the macro as text", last)
		}
	})
	t.Run("joined text matches Render when nothing is missing", func(t *testing.T) {
		tmpl := mustParse(t, "https://t.example/{click_id}?p={payout}")
		rendered, err := tmpl.Render(v)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range tmpl.Preview(v) {
			b.WriteString(s.Text)
		}
		if b.String() != rendered {
			t.Fatalf("joined preview %q != Render %q", b.String(), rendered)
		}
	})
}
