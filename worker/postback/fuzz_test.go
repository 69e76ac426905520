package postback

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzRender checks the promise Parse makes: whatever the payload holds, a
// template that passed the lint renders to a URL with no leftover braces that
// net/url parses, with the scheme and host the template was saved with, and
// whose macro values decode back to exactly what the payload held.
func FuzzRender(f *testing.F) {
	for _, seed := range []struct{ tmpl, value string }{
		{"https://t.example/pb?cid={click_id}&payout={payout}&tx={transaction_id}", "abc 123&x=1"},
		{"https://t.example/{v}/{v}?{v}={v}#{v}", "{}/?#&=%"},
		{"http://t.example:8080/c/id-{v}.gif", "São Paulo 🎉"},
		{"https://u:p@[2001:db8::1]/x?a=%20{v}", "\x00\r\n"},
		{"HTTPS://T.EXAMPLE?{v}", "%zz"},
		{"https://t.example/pb?e={event_id}&n={attempt}&ts={timestamp}&t={event_type}", "ignored"},
		{"https://{v}/", "evil.example"},
		{"https://t.example{v}", "@evil.example"},
		{"https://t.example/pb?x={v", "x"},
		{"https://t.example/pb?x={v}}", "x"},
		{"https://t.example/pb?c={user.country}&s={sub2|}&p={payout|0}", "x y"},
		{"https://t.example/pb?s={sub|a b&c}&t={v|}", "{|}"},
	} {
		f.Add(seed.tmpl, seed.value)
	}
	f.Fuzz(func(t *testing.T, tmplText, value string) {
		tmpl, err := Parse(tmplText)
		if err != nil {
			return
		}
		// Same value for every payload macro, in a form json.Marshal keeps
		// (it replaces invalid UTF-8), so the decoded check below is exact.
		raw, err := json.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		v := Values{EventID: "e", EventType: "t", Timestamp: time.Unix(1_760_000_000, 0), Attempt: 1,
			Payload: map[string]json.RawMessage{}}
		for _, name := range tmpl.Macros() {
			v.Payload[name] = raw
		}

		rendered, err := tmpl.Render(v)
		if err != nil {
			t.Fatalf("Render of a linted template failed: %v", err)
		}
		if strings.ContainsAny(rendered, "{}") {
			t.Fatalf("rendered URL %q contains a brace", rendered)
		}
		u, err := url.Parse(rendered)
		if err != nil {
			t.Fatalf("rendered URL %q does not parse: %v", rendered, err)
		}
		trial, err := url.Parse(tmpl.render(func(string) string { return "x" }))
		if err != nil {
			t.Fatalf("trial render does not parse: %v", err)
		}
		if u.Scheme != trial.Scheme || u.Host != trial.Host || u.User.String() != trial.User.String() {
			t.Fatalf("value %q moved the destination: %s://%s, want %s://%s", value, u.Scheme, u.Host, trial.Scheme, trial.Host)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("scheme %q passed the lint", u.Scheme)
		}

		// Each encoded value must decode to the payload's value.
		for _, seg := range tmpl.Preview(v) {
			if seg.Macro == "" || IsBuiltin(seg.Macro) {
				continue
			}
			got, err := url.PathUnescape(seg.Text)
			if err != nil || got != want {
				t.Fatalf("macro {%s} encoded as %q, decodes to %q (%v), want %q", seg.Macro, seg.Text, got, err, want)
			}
		}
	})
}

// FuzzRenderHash is FuzzRender's promise for hash-style templates: no "#"
// is left in a rendered URL (a hash-style template has no fragment), the
// destination cannot move, values decode back, and the lint's warnings
// never panic.
func FuzzRenderHash(f *testing.F) {
	for _, seed := range []struct{ tmpl, value string }{
		{"https://t.example/p.ashx?r=#s2#&t=#tid#&p=#price#", "abc 123&x=1"},
		{"https://t.example/#v#/#v#?#v#=#v#", "{}/?#&=%"},
		{"https://t.example/pb?cid={click_id}&x=${SUBID}&y=[a]&z={{b}}", "x"},
		{"https://#v#/", "evil.example"},
		{"https://t.example#v#", "@evil.example"},
		{"https://t.example/pb?x=#v", "x"},
		{"https://t.example/pb?c=#user.country#&s=#sub2|#", "#"},
	} {
		f.Add(seed.tmpl, seed.value)
	}
	f.Fuzz(func(t *testing.T, tmplText, value string) {
		if b, err := Parse(tmplText); err == nil {
			_ = b.Warnings()
		}
		tmpl, err := ParseStyle(tmplText, StyleHash)
		if err != nil {
			return
		}
		_ = tmpl.Warnings()
		_ = tmpl.Redacted()
		raw, _ := json.Marshal(value)
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		v := Values{EventID: "e", EventType: "t", Timestamp: time.Unix(1_760_000_000, 0), Attempt: 1, Payload: map[string]json.RawMessage{}}
		for _, name := range tmpl.Macros() {
			v.Payload[name] = raw
		}
		rendered, err := tmpl.Render(v)
		if err != nil {
			t.Fatalf("Render of a linted template failed: %v", err)
		}
		if strings.Contains(rendered, "#") {
			t.Fatalf("rendered URL %q contains a #", rendered)
		}
		u, err := url.Parse(rendered)
		if err != nil {
			t.Fatalf("rendered URL %q does not parse: %v", rendered, err)
		}
		trial, err := url.Parse(tmpl.render(func(string) string { return "x" }))
		if err != nil {
			t.Fatalf("trial render does not parse: %v", err)
		}
		if u.Scheme != trial.Scheme || u.Host != trial.Host || u.User.String() != trial.User.String() {
			t.Fatalf("value %q moved the destination: %s://%s, want %s://%s", value, u.Scheme, u.Host, trial.Scheme, trial.Host)
		}
		for _, seg := range tmpl.Preview(v) {
			if seg.Macro == "" || IsBuiltin(seg.Macro) {
				continue
			}
			if got, err := url.PathUnescape(seg.Text); err != nil || got != want {
				t.Fatalf("macro #%s# encoded as %q, decodes to %q (%v), want %q", seg.Macro, seg.Text, got, err, want)
			}
		}
	})
}

// FuzzShare checks that a payout share never panics, never allocates
// without bound, and when it succeeds writes exactly the decimals asked for.
func FuzzShare(f *testing.F) {
	for _, s := range []string{"12.5", "0.125", "-0.005", "1e3", "1e999999", "abc", "1/3", "99999999999999999999.99"} {
		f.Add(s, 7000, 2)
	}
	f.Fuzz(func(t *testing.T, value string, bp, decimals int) {
		bp, decimals = 1+abs(bp%10000), abs(decimals%4)
		got, err := Share(value, bp, decimals)
		if err != nil {
			return
		}
		_, frac, ok := strings.Cut(got, ".")
		if decimals == 0 && ok || decimals > 0 && len(frac) != decimals {
			t.Fatalf("Share(%q, %d, %d) = %q: wrong number of decimals", value, bp, decimals, got)
		}
	})
}
