package postback

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Warning codes: problems that do not stop a template from being sent, but
// that usually mean the tracker will not get what the operator meant.
const (
	// WarnForeignToken is a token written in another style than the
	// template's, sent as written instead of a value (#s2# in a braces
	// template, {click_id} in a hash template, ${SUBID}, [clickid]...).
	WarnForeignToken = "foreign_token"
	// WarnUnbalanced is a lone delimiter of another style ("[" without
	// "]", a "#" that starts a fragment in a braces template).
	WarnUnbalanced = "unbalanced_delimiter"
	// WarnUnknownMacro is a macro that recent events do not carry (checked
	// by the caller, which has the events).
	WarnUnknownMacro = "unknown_macro"
	// WarnPresetParam is a preset's required parameter missing from the
	// template.
	WarnPresetParam = "preset_param_missing"
	// WarnPresetDefault is a preset's required parameter filled by a macro
	// with a default.
	WarnPresetDefault = "preset_param_default"
)

// Warning is one lint warning. Warnings never stop a template from being
// saved or sent; a problem that would is a *LintError from Parse.
type Warning struct {
	Code string
	Pos  int // 0-based byte offset in the template, or -1
	Msg  string
}

// foreignToken is a token syntax of some tracker, ad network or template
// language, recognised in a template's literal text. Order matters: the
// longer forms are tried first, so "{{x}}" is not read as "{x}".
type foreignToken struct {
	re    *regexp.Regexp
	style Style  // when it is one hookline supports, else ""
	what  string // how a message names it
}

const namePattern = `[A-Za-z_][A-Za-z0-9_.-]{0,63}`

var foreignTokens = []foreignToken{
	{regexp.MustCompile(`^\$\{(` + namePattern + `)\}`), "", "a ${name} token (PropellerAds and other ad networks)"},
	{regexp.MustCompile(`^\{\{\s*(` + namePattern + `)\s*\}\}`), "", "a {{name}} token (Meta ads, Outbrain and template languages)"},
	{regexp.MustCompile(`^\{(` + namePattern + `)\}`), StyleBraces, "a braces-style token (Voluum, Binom, Keitaro, Everflow, Affise)"},
	{regexp.MustCompile(`^#(` + namePattern + `)#`), StyleHash, "a hash-style token (CAKE)"},
	{regexp.MustCompile(`^\[\[(` + namePattern + `)\]\]`), "", "a [[name]] token"},
	{regexp.MustCompile(`^\[(` + namePattern + `)\]`), "", "a [name] token (used by some ad networks)"},
}

// Warnings lints the template's literal text for what Parse lets through
// but a tracker would not understand: tokens of another style, which are
// sent as written, and lone delimiters. The scheme and host are skipped
// (an IPv6 host is written in brackets).
func (t *Template) Warnings() []Warning {
	var out []Warning
	start := pathStart(t.raw)
	for i, p := range t.parts {
		if p.macro != "" {
			continue
		}
		// "${SUBID}" in a braces template parses as "$" then {SUBID}: the
		// macro is filled and the "$" is sent before its value.
		if t.style == StyleBraces && strings.HasSuffix(p.literal, "$") && i+1 < len(t.parts) && t.parts[i+1].macro != "" {
			m := t.parts[i+1].macro
			out = append(out, Warning{Code: WarnForeignToken, Pos: p.pos + len(p.literal) - 1,
				Msg: fmt.Sprintf(`"${%s}" at position %d is a ${name} token (PropellerAds and other ad networks): hookline fills {%s} and sends the "$" before its value; remove the "$"`, m, p.pos+len(p.literal)-1, m)})
		}
		s := p.literal
		for j := 0; j < len(s); j++ {
			pos := p.pos + j
			if pos < start {
				continue
			}
			if w, n := t.foreign(s[j:], pos); n > 0 {
				out = append(out, w)
				j += n - 1
				continue
			}
			switch c := s[j]; {
			case c == '#' && t.style == StyleBraces:
				out = append(out, Warning{Code: WarnUnbalanced, Pos: pos,
					Msg: fmt.Sprintf(`lone "#" at position %d starts the URL fragment, which is never sent: everything after it is dropped; write a literal "#" as %%23`, pos)})
			case c == '{' || c == '}' || c == '[' || c == ']':
				out = append(out, Warning{Code: WarnUnbalanced, Pos: pos,
					Msg: fmt.Sprintf(`unbalanced %q at position %d is sent as written; if it is part of a macro, write the macro as %s`, string(c), pos, t.style.Token("name"))})
			}
		}
	}
	return out
}

// foreign recognises a token of another style at the start of s, returning
// its warning and length.
func (t *Template) foreign(s string, pos int) (Warning, int) {
	for _, f := range foreignTokens {
		m := f.re.FindStringSubmatch(s)
		if m == nil || f.style == t.style {
			continue
		}
		name := m[1]
		fix := fmt.Sprintf("write it as %s", t.style.Token(name))
		if f.style != "" {
			fix += fmt.Sprintf(", or set the macro style to %s if every macro is written this way", f.style)
		}
		sent := "it is sent as written instead of a value"
		if t.style == StyleBraces && m[0][0] == '#' {
			sent = "it starts the URL fragment, so it and everything after it is never sent"
			if strings.IndexByte(t.raw, '#') < pos {
				sent = "it is in the URL fragment, which is never sent"
			}
		}
		return Warning{Code: WarnForeignToken, Pos: pos,
			Msg: fmt.Sprintf(`%q at position %d is %s, but this template uses %s macros (%s): %s; %s`, m[0], pos, f.what, t.style, t.style.Token("name"), sent, fix)}, len(m[0])
	}
	return Warning{}, 0
}

// pathStart is the offset where a template's path (or query) begins, after
// the scheme and authority; Parse has checked they are literal.
func pathStart(tmpl string) int {
	i := strings.Index(tmpl, "://")
	if i < 0 {
		return 0
	}
	i += 3
	if j := strings.IndexAny(tmpl[i:], "/?#"); j >= 0 {
		return i + j
	}
	return len(tmpl)
}

// delimited reports whether s starts with a token open name close, and
// returns it.
func delimited(s string, open, closer byte) (string, bool) {
	if len(s) < 3 || s[0] != open {
		return "", false
	}
	end := strings.IndexByte(s[1:], closer)
	if end < 1 {
		return "", false
	}
	name := s[1 : end+1]
	if len(name) > maxMacroName || !validMacroName(name) {
		return "", false
	}
	return s[:end+2], true
}

// QueryParams returns the query parameter names the template writes, each
// with whether its value is non-empty, in order. Used to check a preset's
// required parameters.
func (t *Template) QueryParams() map[string]bool {
	q := t.raw
	if t.style == StyleBraces {
		q, _, _ = strings.Cut(q, "#")
	}
	_, q, ok := strings.Cut(q, "?")
	out := map[string]bool{}
	if !ok {
		return out
	}
	for _, pair := range strings.Split(q, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		out[k] = out[k] || v != ""
	}
	return out
}

// queryDefaults returns the query parameters whose value holds a macro with
// a default.
func (t *Template) queryDefaults() map[string]bool {
	out := map[string]bool{}
	q := t.raw
	if t.style == StyleBraces {
		q, _, _ = strings.Cut(q, "#")
	}
	_, q, ok := strings.Cut(q, "?")
	if !ok {
		return out
	}
	for _, pair := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(pair, "=")
		parts, err := tokenize(v, t.style)
		if err != nil {
			continue
		}
		for _, p := range parts {
			if p.hasDef {
				out[k] = true
			}
		}
	}
	return out
}

// PayloadHas reports whether a payload's fields (from PayloadFields) hold
// name, as a top-level field or a dotted path, whatever its value: the
// save-time check of macros against recent events.
func PayloadHas(fields map[string]json.RawMessage, name string) bool {
	return Values{Payload: fields}.has(name)
}
