package postback

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLint(t *testing.T) {
	long := strings.Repeat("a", maxMacroName+1)
	tests := []struct {
		name    string
		tmpl    string
		wantPos int
		wantMsg string
	}{
		// non-empty
		{"empty", "", -1, "template is empty"},
		{"only whitespace", " \t\n", -1, "template is empty"},

		// balanced braces
		{"unclosed brace", "https://t.example/pb?cid={click_id", 25, `unclosed "{" at position 25; write a literal "{" as %7B`},
		{"unclosed brace at end", "https://t.example/pb?cid={", 25, `unclosed "{" at position 25; write a literal "{" as %7B`},
		{"nested brace", "https://t.example/pb?cid={click{id}}", 31, `nested "{" at position 31 inside the macro opened at position 25`},
		{"stray closing brace", "https://t.example/pb?cid=click_id}", 33, `stray "}" at position 33; write a literal "}" as %7D`},
		{"closing brace before opening", "https://t.example/pb?cid=}{click_id}", 25, `stray "}" at position 25; write a literal "}" as %7D`},

		// macro names
		{"empty macro", "https://t.example/pb?cid={}", 25, `empty macro "{}" at position 25`},
		{"name with space", "https://t.example/pb?cid={click id}", 25, `macro "{click id}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`},
		{"name starts with digit", "https://t.example/pb?cid={1st}", 25, `macro "{1st}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`},
		{"name starts with dash", "https://t.example/pb?cid={-x}", 25, `macro "{-x}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`},
		{"name with slash", "https://t.example/pb?cid={a/b}", 25, `macro "{a/b}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`},
		{"name with non-ASCII letter", "https://t.example/pb?cid={clíck}", 25, `macro "{clíck}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`},
		{"name too long", "https://t.example/pb?cid={" + long + "}", 25, `macro at position 25 has a name longer than 64 characters`},

		// literal text is sent verbatim
		{"space in literal", "https://t.example/pb?cid={click_id}&note=a b", 42, `template contains a space at position 42; write it as %20`},
		{"trailing newline", "https://t.example/pb?cid={click_id}\n", 35, `template contains control character 0x0A at position 35`},
		{"tab", "https://t.example/pb?\tcid={click_id}", 21, `template contains control character 0x09 at position 21`},
		{"DEL", "https://t.example/pb\x7f", 20, `template contains control character 0x7F at position 20`},
		{"invalid escape", "https://t.example/pb?x=%zz&cid={click_id}", 23, `"%" at position 23 does not start an escape like %2F; write a literal "%" as %25`},
		{"percent at end", "https://t.example/pb?x=100%", 26, `"%" at position 26 does not start an escape like %2F; write a literal "%" as %25`},
		{"percent before macro", "https://t.example/pb?x=%{v}", 23, `"%" at position 23 does not start an escape like %2F; write a literal "%" as %25`},
		{"half escape before macro", "https://t.example/pb?x=%4{v}", 23, `"%" at position 23 does not start an escape like %2F; write a literal "%" as %25`},

		// scheme
		{"no scheme", "t.example/pb?cid={click_id}", 0, "template must start with http:// or https://"},
		{"scheme-relative", "//t.example/pb?cid={click_id}", 0, "template must start with http:// or https://"},
		{"ftp scheme", "ftp://t.example/pb?cid={click_id}", 0, `scheme "ftp" is not allowed; use http or https`},
		{"javascript scheme", "javascript:alert({x})", 0, `scheme "javascript" is not allowed; use http or https`},
		{"missing slashes", "https:t.example/pb?cid={click_id}", 6, `expected "//" after "https:" at position 6`},
		{"one slash", "https:/t.example/pb", 6, `expected "//" after "https:" at position 6`},

		// host present
		{"empty host", "https:///pb?cid={click_id}", 8, `template has no host after "https://"`},
		{"query right after slashes", "https://?cid={click_id}", 8, `template has no host after "https://"`},
		{"only user info", "https://user@/pb", 8, `template has no host after "https://"`},
		{"only port", "https://:8080/pb", 8, `template has no host after "https://"`},

		// no macros in scheme, user info, host or port
		{"macro as scheme", "{scheme}://t.example/pb", 0, `macro "{scheme}" at position 0 is in the URL scheme; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro inside scheme", "http{s}://t.example/pb", 4, `macro "{s}" at position 4 is in the URL scheme; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro as whole template", "{url}", 0, `macro "{url}" at position 0 is in the URL scheme; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro as host", "https://{host}/pb", 8, `macro "{host}" at position 8 is in the URL host; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro as subdomain", "https://{sub}.t.example/pb", 8, `macro "{sub}" at position 8 is in the URL host; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro glued to host", "https://t.example{path}", 17, `macro "{path}" at position 17 is in the URL host; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro instead of slashes", "https:{rest}", 6, `macro "{rest}" at position 6 is in the URL host; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro in user", "https://{user}@t.example/pb", 8, `macro "{user}" at position 8 is in the URL user info; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro in password", "https://u:{pass}@t.example/pb", 10, `macro "{pass}" at position 10 is in the URL user info; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro in port", "https://t.example:{port}/pb", 18, `macro "{port}" at position 18 is in the URL port; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},
		{"macro in IPv6 port", "https://[2001:db8::1]:{port}/pb", 22, `macro "{port}" at position 22 is in the URL port; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`},

		// the sample render parses and keeps scheme and host
		{"invalid port", "https://t.example:http/pb?cid={click_id}", -1, `template is not a valid URL once macros are filled in: invalid port ":http" after host`},
		{"invalid user info", `https://a\b@t.example/pb?cid={click_id}`, -1, `template is not a valid URL once macros are filled in: net/url: invalid userinfo`},
		{"unbalanced IPv6 bracket", "https://[2001:db8::1/pb?cid={click_id}", -1, `template is not a valid URL once macros are filled in: missing ']' in host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error %q", tt.tmpl, tmpl, tt.wantMsg)
			}
			var lintErr *LintError
			if !errors.As(err, &lintErr) {
				t.Fatalf("error %v (%T) is not a *LintError", err, err)
			}
			if lintErr.Msg != tt.wantMsg {
				t.Errorf("Msg = %q\nwant  %q", lintErr.Msg, tt.wantMsg)
			}
			if lintErr.Pos != tt.wantPos {
				t.Errorf("Pos = %d, want %d", lintErr.Pos, tt.wantPos)
			}
			if err.Error() != lintErr.Msg {
				t.Errorf("Error() = %q, want the message", err.Error())
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name       string
		tmpl       string
		wantMacros []string
	}{
		{"documented example", "https://t.example/pb?cid={click_id}&payout={payout}&tx={transaction_id}", []string{"click_id", "payout", "transaction_id"}},
		{"plain http", "http://t.example/pb?cid={click_id}", []string{"click_id"}},
		{"upper-case scheme", "HTTPS://T.EXAMPLE/pb?cid={click_id}", []string{"click_id"}},
		{"no macros", "https://t.example/pb?static=1", nil},
		{"literal port", "https://t.example:8443/pb?cid={click_id}", []string{"click_id"}},
		{"literal user info", "https://user:pa%24s@t.example/pb?cid={click_id}", []string{"click_id"}},
		{"IPv6 literal", "https://[2001:db8::1]:8443/pb?cid={click_id}", []string{"click_id"}},
		{"macro right after host", "https://t.example/{click_id}", []string{"click_id"}},
		{"macro right after host in query", "https://t.example?{click_id}", []string{"click_id"}},
		{"macro right after host in fragment", "https://t.example#{click_id}", []string{"click_id"}},
		{"macro in path segment", "https://t.example/c/{click_id}.gif", []string{"click_id"}},
		{"macro in query key", "https://t.example/pb?{key}=1", []string{"key"}},
		{"adjacent macros", "https://t.example/pb?x={a}{b}", []string{"a", "b"}},
		{"repeated macro listed once", "https://t.example/pb?a={v}&b={w}&c={v}", []string{"v", "w"}},
		{"name punctuation", "https://t.example/pb?a={_a.b-c9}", []string{"_a.b-c9"}},
		{"name at length limit", "https://t.example/pb?a={" + strings.Repeat("n", maxMacroName) + "}", []string{strings.Repeat("n", maxMacroName)}},
		{"literal escapes", "https://t.example/a%20b?x=%7Bnot-a-macro%7D&y={y}", []string{"y"}},
		{"at sign in path", "https://t.example/@{who}", []string{"who"}},
		{"built-ins", "https://t.example/pb?e={event_id}&t={event_type}&ts={timestamp}&n={attempt}", []string{"event_id", "event_type", "timestamp", "attempt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.tmpl, err)
			}
			if got := tmpl.String(); got != tt.tmpl {
				t.Errorf("String() = %q, want the template unchanged", got)
			}
			if got := tmpl.Macros(); !reflect.DeepEqual(got, tt.wantMacros) {
				t.Errorf("Macros() = %q, want %q", got, tt.wantMacros)
			}
		})
	}
}

func TestMacrosReturnsCopy(t *testing.T) {
	tmpl := mustParse(t, "https://t.example/pb?a={a}&b={b}")
	tmpl.Macros()[0] = "changed"
	if got := tmpl.Macros()[0]; got != "a" {
		t.Fatalf("Macros()[0] = %q after caller modified its copy, want %q", got, "a")
	}
}

func mustParse(t testing.TB, s string) *Template {
	t.Helper()
	tmpl, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return tmpl
}
