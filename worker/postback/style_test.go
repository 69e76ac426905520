package postback

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHashStyleRenders(t *testing.T) {
	tmpl, err := ParseStyle("https://t.test/p.ashx?r=#click_id#&t=#transaction_id#&n=#attempt#", StyleHash)
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Macros(); strings.Join(got, ",") != "click_id,transaction_id,attempt" {
		t.Fatalf("macros = %v", got)
	}
	v := Values{EventID: "e1", EventType: "conversion", Timestamp: time.Unix(1, 0), Attempt: 2,
		Payload: map[string]json.RawMessage{"click_id": json.RawMessage(`"abc 1#2"`), "transaction_id": json.RawMessage(`"T-9"`)}}
	got, err := tmpl.Render(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://t.test/p.ashx?r=abc%201%232&t=T-9&n=2"; got != want {
		t.Fatalf("render = %s, want %s", got, want)
	}
	// A macro the payload lacks is still a missing field.
	delete(v.Payload, "transaction_id")
	var missing *MissingFieldError
	if _, err := tmpl.Render(v); !errors.As(err, &missing) || missing.Field != "transaction_id" {
		t.Fatalf("render without the field = %v, want a MissingFieldError", err)
	}
	// The preview writes a missing macro in the template's own style.
	for _, seg := range tmpl.Preview(v) {
		if seg.Macro == "transaction_id" && seg.Text != "#transaction_id#" {
			t.Fatalf("missing macro previewed as %q", seg.Text)
		}
	}
}

func TestHashStyleLint(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"unclosed hash", "https://t.test/pb?cid=#click_id", `unclosed "#" at position 22; write a literal "#" as %23`},
		{"empty macro", "https://t.test/pb?cid=##", `empty macro "##" at position 22`},
		{"invalid name", "https://t.test/pb?cid=#a b#", `macro "#a b#" has an invalid name`},
		{"macro in host", "https://#host#/pb", `macro "#host#" at position 8 is in the URL host`},
		{"percent token", "https://t.test/pb?cid=%click_id%", `"%click_id%" at position 22 is a %name%-style macro`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStyle(tt.tmpl, StyleHash)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseStyle(%q) = %v, want %q", tt.tmpl, err, tt.want)
			}
		})
	}
	if _, err := ParseStyle("https://t.test/", "dollar"); err == nil {
		t.Fatal("an unknown style parsed")
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name  string
		style Style
		tmpl  string
		want  []string // code@pos
		msg   string   // part of the first message
	}{
		{"clean braces", StyleBraces, "https://t.test/pb?cid={click_id}", nil, ""},
		{"clean hash", StyleHash, "https://t.test/pb?cid=#click_id#", nil, ""},
		{"IPv6 host is not a bracket token", StyleBraces, "http://[::1]:8080/pb?cid={click_id}", nil, ""},
		{"hash token in braces", StyleBraces, "https://t.test/pb?cid={click_id}&s2=#s2#", []string{"foreign_token@36"}, `"#s2#" at position 36 is a hash-style token (CAKE), but this template uses braces macros ({name}): it starts the URL fragment`},
		{"braces token in hash", StyleHash, "https://t.test/pb?cid=#click_id#&p={payout}", []string{"foreign_token@35"}, `write it as #payout#, or set the macro style to braces`},
		{"dollar brace in braces", StyleBraces, "https://t.test/pb?cid=${SUBID}", []string{"foreign_token@22"}, `remove the "$"`},
		{"dollar brace in hash", StyleHash, "https://t.test/pb?cid=${SUBID}", []string{"foreign_token@22"}, `a ${name} token`},
		{"double braces in hash", StyleHash, "https://t.test/pb?ad={{ad.id}}", []string{"foreign_token@21"}, `a {{name}} token`},
		{"square brackets", StyleBraces, "https://t.test/pb?key=[CLICK_ID]&x=[[y]]", []string{"foreign_token@22", "foreign_token@35"}, `write it as {CLICK_ID}`},
		{"lone bracket", StyleBraces, "https://t.test/pb?key=[CLICK_ID", []string{"unbalanced_delimiter@22"}, `unbalanced "["`},
		{"lone brace in hash", StyleHash, "https://t.test/pb?cid=#click_id#&p={payout", []string{"unbalanced_delimiter@35"}, `write the macro as #name#`},
		{"lone hash in braces", StyleBraces, "https://t.test/pb?cid={click_id}#", []string{"unbalanced_delimiter@32"}, `starts the URL fragment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ParseStyle(tt.tmpl, tt.style)
			if err != nil {
				t.Fatal(err)
			}
			ws := tmpl.Warnings()
			var got []string
			for _, w := range ws {
				got = append(got, w.Code+"@"+itoa(w.Pos))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("warnings = %v, want %v (%+v)", got, tt.want, ws)
			}
			if tt.msg != "" && !strings.Contains(ws[0].Msg, tt.msg) {
				t.Fatalf("message %q does not say %q", ws[0].Msg, tt.msg)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestHashTemplateRedacted(t *testing.T) {
	tmpl, err := ParseStyle("https://t.test/c/#click_id#/pb?key=secret&cid=#click_id#", StyleHash)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tmpl.Redacted(), "https://t.test/c/***/pb?key=***&cid=***"; got != want {
		t.Fatalf("Redacted = %s, want %s", got, want)
	}
}

func TestPresetMissingParams(t *testing.T) {
	p, _ := PresetByID("voluum")
	ok, _ := Parse("https://t.test/postback?cid={click_id}")
	if ws := p.MissingParams(ok); len(ws) != 0 {
		t.Fatalf("warnings for a template with cid: %+v", ws)
	}
	bad, _ := Parse("https://t.test/postback?click={click_id}&cid=")
	ws := p.MissingParams(bad)
	if len(ws) != 1 || ws[0].Code != WarnPresetParam || !strings.Contains(ws[0].Msg, `Voluum requires the "cid" parameter`) {
		t.Fatalf("warnings = %+v", ws)
	}
	cake, _ := PresetByID("cake")
	if cake.MacroStyle() != StyleHash {
		t.Fatal("the CAKE preset is not hash style")
	}
	if p.MacroStyle() != StyleBraces {
		t.Fatal("the Voluum preset is not braces style")
	}
}
