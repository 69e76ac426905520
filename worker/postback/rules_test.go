package postback

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRenderNestedPaths(t *testing.T) {
	tests := []struct {
		name, tmpl, payload, want string
	}{
		{"object member", "https://t.test/pb?c={user.country}", `{"user":{"country":"DE"}}`, "https://t.test/pb?c=DE"},
		{"deep", "https://t.test/pb?c={a.b.c}", `{"a":{"b":{"c":7}}}`, "https://t.test/pb?c=7"},
		{"array index", "https://t.test/pb?s={items.1.sku}", `{"items":[{"sku":"x"},{"sku":"y z"}]}`, "https://t.test/pb?s=y%20z"},
		{"top-level dotted field wins", "https://t.test/pb?c={user.country}", `{"user.country":"FR","user":{"country":"DE"}}`, "https://t.test/pb?c=FR"},
		{"hash style", "https://t.test/pb?c=#user.country#", `{"user":{"country":"DE"}}`, "https://t.test/pb?c=DE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			style := StyleBraces
			if strings.Contains(tt.tmpl, "#") {
				style = StyleHash
			}
			got, err := renderStyle(t, tt.tmpl, style, tt.payload, nil)
			if err != nil || got != tt.want {
				t.Fatalf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	for _, tt := range []struct{ name, payload, found string }{
		{"member absent", `{"user":{}}`, ""},
		{"root absent", `{}`, ""},
		{"through a scalar", `{"user":"x"}`, ""},
		{"index out of range", `{"user":[1]}`, ""},
		{"an object", `{"user":{"country":{"code":"DE"}}}`, "an object"},
		{"null", `{"user":{"country":null}}`, "null"},
	} {
		t.Run("missing "+tt.name, func(t *testing.T) {
			_, err := renderStyle(t, "https://t.test/pb?c={user.country}", StyleBraces, tt.payload, nil)
			var m *MissingFieldError
			if !errors.As(err, &m) || m.Field != "user.country" || m.Found != tt.found {
				t.Fatalf("err = %v, want MissingFieldError user.country found %q", err, tt.found)
			}
		})
	}
}

func TestRenderDefaults(t *testing.T) {
	tests := []struct {
		name, tmpl, payload, want, wantErr string
	}{
		{"empty default when absent", "https://t.test/pb?s={sub2|}&c={cid}", `{"cid":"1"}`, "https://t.test/pb?s=&c=1", ""},
		{"default when absent", "https://t.test/pb?p={payout|0}", `{}`, "https://t.test/pb?p=0", ""},
		{"default when null", "https://t.test/pb?p={payout|0}", `{"payout":null}`, "https://t.test/pb?p=0", ""},
		{"value wins", "https://t.test/pb?p={payout|0}", `{"payout":12.50}`, "https://t.test/pb?p=12.50", ""},
		{"default is encoded", "https://t.test/pb?s={sub|a b&c}", `{}`, "https://t.test/pb?s=a%20b%26c", ""},
		{"nested with default", "https://t.test/pb?c={user.country|XX}", `{"user":{}}`, "https://t.test/pb?c=XX", ""},
		{"hash default", "https://t.test/pb?s=#s2|none#", `{}`, "https://t.test/pb?s=none", ""},
		{"only that occurrence", "https://t.test/pb?a={v|x}&b={v}", `{}`, "", `payload has no field "v"`},
		{"object still fails", "https://t.test/pb?a={v|x}", `{"v":{}}`, "", "is an object"},
		{"without default still fails", "https://t.test/pb?a={v}", `{}`, "", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			style := StyleBraces
			if strings.Contains(tt.tmpl, "#") {
				style = StyleHash
			}
			got, err := renderStyle(t, tt.tmpl, style, tt.payload, nil)
			if tt.wantErr != "" {
				var m *MissingFieldError
				if !errors.As(err, &m) {
					t.Fatalf("err = %v, want a MissingFieldError", err)
				}
				if tt.wantErr != "missing" && !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDefaultLint(t *testing.T) {
	long := strings.Repeat("x", maxDefault+1)
	for _, tt := range []struct{ name, tmpl, want string }{
		{"too long", "https://t.test/pb?s={sub|" + long + "}", "has a default longer than 128 characters"},
		{"control character", "https://t.test/pb?s={sub|a\tb}", "control character 0x09 in its default"},
		{"invalid name before the bar", "https://t.test/pb?s={1sub|x}", "has an invalid name"},
		{"brace in default", "https://t.test/pb?s={sub|{x}}", `nested "{"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.tmpl); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
	tmpl := mustParse(t, "https://t.test/c/{a|x}/pb?s={sub2|}&p={payout|0}&q={sub2}")
	if got := tmpl.Macros(); strings.Join(got, ",") != "a,sub2,payout" {
		t.Fatalf("Macros = %q", got)
	}
	if d := tmpl.Defaults(); len(d) != 3 || d["sub2"] != "" || d["payout"] != "0" {
		t.Fatalf("Defaults = %v", d)
	}
	if got, want := tmpl.Redacted(), "https://t.test/c/***/pb?s=***&p=***&q=***"; got != want {
		t.Fatalf("Redacted = %q, want %q", got, want)
	}
	hash, err := ParseStyle("https://t.test/c/#a|x#/pb?s=#sub2|#", StyleHash)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hash.Redacted(), "https://t.test/c/***/pb?s=***"; got != want {
		t.Fatalf("hash Redacted = %q, want %q", got, want)
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		value    string
		bp, dec  int
		want     string
		wantFail bool
	}{
		{"12.5", 7000, 2, "8.75", false},
		{"10", 7000, 2, "7.00", false},
		{"12.50", 10000, 2, "12.50", false},
		{"0.125", 7000, 2, "0.09", false},  // 0.0875
		{"0.005", 10000, 2, "0.01", false}, // half rounds away from zero
		{"0.015", 10000, 2, "0.02", false}, // not to even
		{"-0.005", 10000, 2, "-0.01", false},
		{"-0.004", 10000, 2, "0.00", false},
		{"1e3", 5000, 2, "500.00", false},
		{"1.5E-1", 10000, 2, "0.15", false},
		{"1500", 7000, 0, "1050", false},      // JPY
		{"1001", 5000, 0, "501", false},       // 500.5 up
		{"12.345", 10000, 3, "12.345", false}, // BHD
		{"99999999999999999999.99", 3333, 2, "33330000000000000000.00", false},
		{"abc", 7000, 2, "", true},
		{"1/3", 7000, 2, "", true},
		{"0x10", 7000, 2, "", true},
		{"1.", 7000, 2, "", true},
		{".5", 7000, 2, "", true},
		{"1e999999", 7000, 2, "", true},
		{"", 7000, 2, "", true},
		{"NaN", 7000, 2, "", true},
	}
	for _, tt := range tests {
		got, err := Share(tt.value, tt.bp, tt.dec)
		if tt.wantFail {
			if err == nil {
				t.Errorf("Share(%q) = %q, want an error", tt.value, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Share(%q, %d, %d) = %q, %v; want %q", tt.value, tt.bp, tt.dec, got, err, tt.want)
		}
	}
}

func TestCurrencyDecimals(t *testing.T) {
	for code, want := range map[string]int{"USD": 2, "EUR": 2, "JPY": 0, "KRW": 0, "jpy": 0, "BHD": 3, "": 2, "XYZ": 2, "dollars": 2} {
		if got := CurrencyDecimals(code); got != want {
			t.Errorf("CurrencyDecimals(%q) = %d, want %d", code, got, want)
		}
	}
}

func TestPercent(t *testing.T) {
	for in, want := range map[string]int{"70": 7000, "70.5": 7050, "62.25": 6225, "100": 10000, "0.01": 1, "70 %": 7000, "70%": 7000} {
		got, err := ParsePercent(in)
		if err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %d, %v; want %d", in, got, err, want)
		}
		if back, _ := ParsePercent(FormatPercent(got)); back != got {
			t.Errorf("FormatPercent(%d) = %q does not read back", got, FormatPercent(got))
		}
	}
	for _, in := range []string{"", "0", "100.01", "101", "-5", "7.125", "abc", "70.", ".5", "1e2"} {
		if got, err := ParsePercent(in); err == nil {
			t.Errorf("ParsePercent(%q) = %d, want an error", in, got)
		}
	}
	if got := FormatPercent(6250); got != "62.5" {
		t.Errorf("FormatPercent(6250) = %q", got)
	}
}

func TestRenderRules(t *testing.T) {
	statusMap := map[string]map[string]string{"status": {"approved": "sale", "pending": "lead", "declined": "rejected"}}
	const tmpl = "https://t.test/pb?s={status}&p={payout}"
	tests := []struct {
		name    string
		rules   Rules
		payload string
		want    string
		skip    bool
		fail    bool
		missing bool
	}{
		{"mapped", Rules{ValueMaps: statusMap}, `{"status":"approved","payout":12.5}`, "https://t.test/pb?s=sale&p=12.5", false, false, false},
		{"unmapped sent as is", Rules{ValueMaps: statusMap}, `{"status":"refunded","payout":1}`, "https://t.test/pb?s=refunded&p=1", false, false, false},
		{"unmapped skip", Rules{ValueMaps: statusMap, Unmapped: UnmappedSkip}, `{"status":"refunded","payout":1}`, "", true, false, false},
		{"unmapped fail", Rules{ValueMaps: statusMap, Unmapped: UnmappedFail}, `{"status":"Approved","payout":1}`, "", false, true, false},
		{"share", Rules{PayoutShareBP: 7000}, `{"status":"x","payout":12.5}`, "https://t.test/pb?s=x&p=8.75", false, false, false},
		{"share of a string", Rules{PayoutShareBP: 7000}, `{"status":"x","payout":"10"}`, "https://t.test/pb?s=x&p=7.00", false, false, false},
		{"share in yen", Rules{PayoutShareBP: 7000}, `{"status":"x","payout":1500,"currency":"JPY"}`, "https://t.test/pb?s=x&p=1050", false, false, false},
		{"share in won", Rules{PayoutShareBP: 3333}, `{"status":"x","payout":1000,"currency":"KRW"}`, "https://t.test/pb?s=x&p=333", false, false, false},
		{"share of a non-number", Rules{PayoutShareBP: 7000}, `{"status":"x","payout":"n/a"}`, "", false, false, true},
		{"share on another field", Rules{PayoutShareBP: 5000, PayoutField: "status"}, `{"status":"3","payout":12.5}`, "https://t.test/pb?s=1.50&p=12.5", false, false, false},
		{"share then map", Rules{PayoutShareBP: 5000, ValueMaps: map[string]map[string]string{"payout": {"5.00": "five"}}}, `{"status":"x","payout":10}`, "https://t.test/pb?s=x&p=five", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderStyle(t, tmpl, StyleBraces, tt.payload, &tt.rules)
			var un *UnmappedError
			var missing *MissingFieldError
			switch {
			case tt.skip || tt.fail:
				if !errors.As(err, &un) || un.Skip() != tt.skip || un.Field != "status" {
					t.Fatalf("err = %v, want UnmappedError skip=%v", err, tt.skip)
				}
			case tt.missing:
				if !errors.As(err, &missing) || !strings.Contains(err.Error(), "not a number") {
					t.Fatalf("err = %v, want a payout that is not a number", err)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("Render = %q, %v; want %q", got, err, tt.want)
				}
			}
		})
	}
	t.Run("default is not shared but is mapped", func(t *testing.T) {
		r := &Rules{PayoutShareBP: 7000, ValueMaps: statusMap}
		got, err := renderStyle(t, "https://t.test/pb?s={status|pending}&p={payout|0}", StyleBraces, `{}`, r)
		if err != nil || got != "https://t.test/pb?s=lead&p=0" {
			t.Fatalf("Render = %q, %v", got, err)
		}
	})
	t.Run("preview shows mapped values and problems", func(t *testing.T) {
		r := &Rules{ValueMaps: statusMap, Unmapped: UnmappedSkip}
		fields, _ := PayloadFields([]byte(`{"status":"approved"}`))
		segs := mustParse(t, "https://t.test/pb?s={status}&n={sub|}").PreviewRules(Values{Payload: fields}, r)
		if segs[1].Text != "sale" || segs[3].Text != "" || !segs[3].Default {
			t.Fatalf("segments = %+v", segs)
		}
		fields, _ = PayloadFields([]byte(`{"status":"odd"}`))
		segs = mustParse(t, "https://t.test/pb?s={status}").PreviewRules(Values{Payload: fields}, r)
		if !segs[1].Missing || !strings.Contains(segs[1].Problem, "not in the endpoint's value map") {
			t.Fatalf("segments = %+v", segs)
		}
	})
}

func TestRulesValidate(t *testing.T) {
	many := map[string]map[string]string{}
	for i := range maxMapFields + 1 {
		many["f"+itoa(i)] = map[string]string{"a": "b"}
	}
	tests := []struct {
		name  string
		rules Rules
		field string
	}{
		{"ok", Rules{ValueMaps: map[string]map[string]string{"status": {"approved": "sale"}}, Unmapped: "skip", PayoutShareBP: 7000, PayoutField: "amount"}, ""},
		{"zero", Rules{}, ""},
		{"unknown policy", Rules{Unmapped: "drop"}, "unmapped"},
		{"share over 100", Rules{PayoutShareBP: 10001}, "payout_share"},
		{"negative share", Rules{PayoutShareBP: -1}, "payout_share"},
		{"bad payout field", Rules{PayoutField: "a b"}, "payout_field"},
		{"bad map field", Rules{ValueMaps: map[string]map[string]string{"1x": {"a": "b"}}}, "value_maps"},
		{"empty map", Rules{ValueMaps: map[string]map[string]string{"status": {}}}, "value_maps"},
		{"control character", Rules{ValueMaps: map[string]map[string]string{"status": {"a\n": "b"}}}, "value_maps"},
		{"too many fields", Rules{ValueMaps: many}, "value_maps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Validate()
			var re *RuleError
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.As(err, &re) || re.Field != tt.field {
				t.Fatalf("Validate = %v, want an error on %s", err, tt.field)
			}
		})
	}
	r := Rules{Unmapped: "send", PayoutField: "payout"}
	r.Normalize()
	if !r.IsZero() || r.Unmapped != "" || r.PayoutField != "" {
		t.Fatalf("Normalize left %+v", r)
	}
	if got, err := ParseRules([]byte(`{}`)); got != nil || err != nil {
		t.Fatalf("ParseRules({}) = %v, %v", got, err)
	}
	if got, err := ParseRules([]byte(`{"payout_share_bp":7000}`)); err != nil || got.PayoutShareBP != 7000 {
		t.Fatalf("ParseRules = %+v, %v", got, err)
	}
	if _, err := ParseRules([]byte(`{"unmapped":"x"}`)); err == nil {
		t.Fatal("ParseRules accepted an invalid policy")
	}
}

func TestPresetParamWarnings(t *testing.T) {
	p, _ := PresetByID("keitaro")
	tmpl := mustParse(t, "https://t.test/K/postback?subid={click_id|none}&status={status|lead}&payout={payout|0}")
	ws := p.ParamWarnings(tmpl)
	if len(ws) != 1 || ws[0].Code != WarnPresetDefault || !strings.Contains(ws[0].Msg, `"subid"`) {
		t.Fatalf("warnings = %+v", ws)
	}
	if ws := p.ParamWarnings(mustParse(t, "https://t.test/K/postback?subid={click_id}&payout={payout|0}")); len(ws) != 0 {
		t.Fatalf("warnings for defaults on optional parameters: %+v", ws)
	}
}

func TestPayloadHas(t *testing.T) {
	fields, _ := PayloadFields([]byte(`{"a":null,"user":{"country":"DE"},"items":[{"sku":"x"}]}`))
	for name, want := range map[string]bool{"a": true, "user": true, "user.country": true, "user.city": false, "items.0.sku": true, "items.1.sku": false, "b": false} {
		if got := PayloadHas(fields, name); got != want {
			t.Errorf("PayloadHas(%q) = %v, want %v", name, got, want)
		}
	}
}

// renderStyle renders tmpl in style with built-ins filled, the payload
// JSON and rules r (nil for none).
func renderStyle(t *testing.T, tmpl string, style Style, payload string, r *Rules) (string, error) {
	t.Helper()
	parsed, err := ParseStyle(tmpl, style)
	if err != nil {
		t.Fatalf("ParseStyle(%q): %v", tmpl, err)
	}
	fields, err := PayloadFields([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	v := SampleValues("e1", time.Unix(1_760_000_000, 0))
	v.Payload = fields
	return parsed.RenderRules(v, r)
}
