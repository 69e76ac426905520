// Package postback owns affiliate postback URL templates: the save-time lint
// that turns a template such as
//
//	https://t.example/pb?cid={click_id}&payout={payout}
//
// into an immutable Template, rendering it with an event's values (each value
// percent-encoded, the template's own text never touched), the live preview
// shown in the endpoint form, log redaction, and the tracker presets
// offered during onboarding.
//
// The lint exists because an unreplaced or mangled macro in a sent URL is the
// commonest postback fault, and because a macro in the scheme or host would
// let event data choose where hookline sends requests. A template that
// parses can always be rendered into a well-formed URL with the same scheme
// and host; the only send-time failure left is a missing payload field.
//
// It is a pure leaf package: no database, no network, no clock.
package postback

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// maxMacroName bounds macro names so a pasted blob cannot pass for one.
const maxMacroName = 64

// maxDefault bounds a macro's default value ({sub2|none}).
const maxDefault = 128

// sampleValue fills every macro during the lint's trial render. It holds the
// characters that would restructure a URL if they were not encoded, so the
// trial proves encoding keeps event data inside its component.
const sampleValue = "sample value/&=?#@:{}"

// LintError is a problem found by Parse, phrased for the person editing the
// template.
type LintError struct {
	// Pos is the 0-based byte offset in the template where the problem is,
	// or -1 when it concerns the template as a whole.
	Pos int
	// Msg says what is wrong and, where it helps, how to fix it.
	Msg string
}

func (e *LintError) Error() string { return e.Msg }

func lintErrorf(pos int, format string, args ...any) *LintError {
	return &LintError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Template is a parsed postback URL template. It is immutable and safe for
// concurrent use.
type Template struct {
	raw    string
	style  Style
	parts  []part
	macros []string
}

// part is a run of literal template text or one macro occurrence.
type part struct {
	pos     int    // byte offset in the template
	literal string // the text, when macro is ""
	macro   string // macro name (a field or a dotted path), without braces
	idx     int    // index of macro in Template.macros
	// def is the default after "|" ({sub2|} has an empty one), sent when
	// the payload has no value; hasDef tells an empty default from none.
	def    string
	hasDef bool
}

// raw returns the part as written in a template of style s.
func (p part) raw(s Style) string {
	if p.macro == "" {
		return p.literal
	}
	if p.hasDef {
		return s.Token(p.macro + "|" + p.def)
	}
	return s.Token(p.macro)
}

// Parse lints a braces-style postback URL template ({click_id}); see
// ParseStyle.
func Parse(tmpl string) (*Template, error) { return ParseStyle(tmpl, StyleBraces) }

// ParseStyle lints a postback URL template whose macros are written in
// style and returns it ready to render. The first problem found is returned
// as a *LintError. The rules:
//
//   - the template is not empty;
//   - the style's delimiters balance. Braces: every "{" is closed by "}"
//     before another "{", and there is no "}" outside a macro (a literal
//     brace is written %7B / %7D). Hash: "#" come in pairs, each pair
//     enclosing a macro name (a literal "#" is written %23, and a hash-style
//     template has no fragment);
//   - macro names match [A-Za-z_][A-Za-z0-9_.-]* and are at most 64 bytes;
//     a dotted name is a path into nested objects ({user.country}) unless
//     the payload has a top-level field of that very name;
//   - a macro may carry a default after "|" ({sub2|}, {payout|0}): at most
//     128 bytes without control characters, sent (encoded like any value)
//     when the field is absent or null;
//   - the literal text has no spaces or control characters, and every "%"
//     starts a valid escape (%XX), since the text is sent exactly as written;
//   - the scheme is http or https, followed by "//" and a non-empty host;
//   - no macro appears in the scheme, user info, host or port;
//   - the URL made by filling every macro with a sample value parses with
//     net/url and keeps the template's scheme and host.
func ParseStyle(tmpl string, style Style) (*Template, error) {
	if !style.Valid() {
		return nil, lintErrorf(-1, "unknown macro style %q; use braces or hash", string(style))
	}
	if strings.TrimSpace(tmpl) == "" {
		return nil, lintErrorf(-1, "template is empty")
	}
	parts, err := tokenize(tmpl, style)
	if err != nil {
		return nil, err
	}
	if err := checkLiteralText(parts); err != nil {
		return nil, err
	}
	scheme, host, err := checkOrigin(tmpl, parts, style)
	if err != nil {
		return nil, err
	}

	t := newTemplate(tmpl, style, parts)

	// Belt and braces: checkOrigin reasons about the template text, this
	// asks net/url what a real render would look like.
	trial := t.render(func(string) string { return escape(sampleValue) })
	u, err := url.Parse(trial)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, lintErrorf(-1, "template is not a valid URL once macros are filled in: %v", err)
	}
	if u.Scheme != scheme || u.Host != host {
		return nil, lintErrorf(-1, "template resolves to %s://%s instead of %s://%s once macros are filled in", u.Scheme, u.Host, scheme, host)
	}
	return t, nil
}

// String returns the template exactly as given to Parse.
func (t *Template) String() string { return t.raw }

// Style returns the macro style the template was parsed with.
func (t *Template) Style() Style { return t.style }

// Macros returns the distinct macro names in order of first appearance.
func (t *Template) Macros() []string {
	return append([]string(nil), t.macros...)
}

// Redacted returns the template with every query value, every path segment
// holding a macro, the user info and the fragment replaced by "***". Use it,
// rather than Redact of a rendered URL, wherever the template is at hand:
// only the template knows which path segments carry event data. A
// hash-style template is redacted in its braces spelling, since Redact
// would read its first "#" as the start of a fragment.
func (t *Template) Redacted() string {
	if t.style == StyleBraces {
		return Redact(t.raw)
	}
	var b strings.Builder
	for _, p := range t.parts {
		b.WriteString(p.raw(StyleBraces))
	}
	return Redact(b.String())
}

// render concatenates the template with each macro replaced by value(name),
// which must already be encoded.
func (t *Template) render(value func(name string) string) string {
	var b strings.Builder
	b.Grow(len(t.raw) + 16*len(t.macros))
	for _, p := range t.parts {
		if p.macro == "" {
			b.WriteString(p.literal)
			continue
		}
		b.WriteString(value(p.macro))
	}
	return b.String()
}

// Defaults returns each macro that has a default in some occurrence, with
// the first such default.
func (t *Template) Defaults() map[string]string {
	out := map[string]string{}
	for _, p := range t.parts {
		if _, ok := out[p.macro]; p.hasDef && !ok {
			out[p.macro] = p.def
		}
	}
	return out
}

// tokenize splits tmpl into literal runs and macros, enforcing the
// style's delimiter and macro-name rules.
func tokenize(tmpl string, style Style) ([]part, error) {
	open, closer := style.delims()
	var parts []part
	litStart := 0
	flush := func(end int) {
		if end > litStart {
			parts = append(parts, part{pos: litStart, literal: tmpl[litStart:end]})
		}
	}
	for i := 0; i < len(tmpl); i++ {
		switch c := tmpl[i]; {
		case c == closer && open != closer:
			return nil, lintErrorf(i, `stray "%c" at position %d; write a literal "%c" as %s`, c, i, c, pctEscape(c))
		case c == open:
			end := -1
			for j := i + 1; j < len(tmpl) && end < 0; j++ {
				switch tmpl[j] {
				case closer:
					end = j
				case open:
					return nil, lintErrorf(j, `nested "%c" at position %d inside the macro opened at position %d`, open, j, i)
				}
			}
			if end < 0 {
				return nil, lintErrorf(i, `unclosed "%c" at position %d; write a literal "%c" as %s`, open, i, open, pctEscape(open))
			}
			name, def, hasDef := strings.Cut(tmpl[i+1:end], "|")
			if err := checkMacroName(name, i, style); err != nil {
				return nil, err
			}
			if hasDef {
				if err := checkDefault(name, def, i, style); err != nil {
					return nil, err
				}
			}
			flush(i)
			parts = append(parts, part{pos: i, macro: name, def: def, hasDef: hasDef})
			litStart = end + 1
			i = end
		}
	}
	flush(len(tmpl))
	return parts, nil
}

// pctEscape is c percent-encoded, for messages.
func pctEscape(c byte) string { return fmt.Sprintf("%%%02X", c) }

func checkMacroName(name string, pos int, style Style) error {
	if name == "" {
		return lintErrorf(pos, `empty macro "%s" at position %d`, style.Token(""), pos)
	}
	if len(name) > maxMacroName {
		return lintErrorf(pos, `macro at position %d has a name longer than %d characters`, pos, maxMacroName)
	}
	if !validMacroName(name) {
		return lintErrorf(pos, `macro "%s" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"`, style.Token(name))
	}
	return nil
}

// checkDefault refuses a default that could not be sent as a value: the
// text is encoded like a payload value, so only length and control
// characters matter.
func checkDefault(name, def string, pos int, style Style) error {
	if len(def) > maxDefault {
		return lintErrorf(pos, `macro "%s" at position %d has a default longer than %d characters`, style.Token(name+"|…"), pos, maxDefault)
	}
	for i := 0; i < len(def); i++ {
		if c := def[i]; c < 0x20 || c == 0x7f {
			return lintErrorf(pos, `macro "%s" at position %d has control character 0x%02X in its default`, style.Token(name+"|…"), pos, c)
		}
	}
	return nil
}

// validMacroName reports whether name matches [A-Za-z_][A-Za-z0-9_.-]*.
func validMacroName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return name != ""
}

// checkLiteralText refuses text that would be changed or misread on the way
// out: the template is sent byte for byte, so a pasted space or newline, or a
// "%" that is not an escape, would otherwise reach the tracker mangled.
func checkLiteralText(parts []part) error {
	for _, p := range parts {
		s := p.literal
		for i := 0; i < len(s); i++ {
			pos := p.pos + i
			switch c := s[i]; {
			case c == ' ':
				return lintErrorf(pos, `template contains a space at position %d; write it as %%20`, pos)
			case c < 0x20 || c == 0x7f:
				return lintErrorf(pos, `template contains control character 0x%02X at position %d`, c, pos)
			case c == '%':
				if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
					if tok, ok := delimited(s[i:], '%', '%'); ok {
						return lintErrorf(pos, `%q at position %d is a %%name%%-style macro, which is not sent as a value; write it as {%s} (braces style) or #%s# (hash style)`, tok, pos, tok[1:len(tok)-1], tok[1:len(tok)-1])
					}
					return lintErrorf(pos, `"%%" at position %d does not start an escape like %%2F; write a literal "%%" as %%25`, pos)
				}
			}
		}
	}
	return nil
}

// checkOrigin enforces that the scheme, user info, host and port are literal
// text, and returns the lower-cased scheme and the host[:port] as net/url
// will report them.
func checkOrigin(tmpl string, parts []part, style Style) (scheme, host string, err error) {
	// The scans below walk the template left to right and jump over each
	// macro, so knowing where macros start is enough.
	starts := make(map[int]part)
	for _, p := range parts {
		if p.macro != "" {
			starts[p.pos] = p
		}
	}
	refuse := func(p part, where string) error {
		return lintErrorf(p.pos, `macro "%s" at position %d is in the URL %s; the scheme, host and port must be written out so event data cannot choose where postbacks are sent`, style.Token(p.macro), p.pos, where)
	}

	i := 0
	for ; i < len(tmpl); i++ {
		if p, ok := starts[i]; ok {
			return "", "", refuse(p, "scheme")
		}
		if c := tmpl[i]; !isSchemeChar(c, i) {
			break
		}
	}
	if i == len(tmpl) || tmpl[i] != ':' || i == 0 {
		return "", "", lintErrorf(0, "template must start with http:// or https://")
	}
	scheme = strings.ToLower(tmpl[:i])
	if scheme != "http" && scheme != "https" {
		return "", "", lintErrorf(0, `scheme %q is not allowed; use http or https`, tmpl[:i])
	}
	i++ // past ':'
	for k := i; k < i+2 && k < len(tmpl); k++ {
		if p, ok := starts[k]; ok {
			return "", "", refuse(p, "host")
		}
	}
	if !strings.HasPrefix(tmpl[i:], "//") {
		return "", "", lintErrorf(i, `expected "//" after "%s:" at position %d`, tmpl[:i-1], i)
	}
	authStart := i + 2

	authEnd := authStart
	var firstMacro *part
	for ; authEnd < len(tmpl); authEnd++ {
		if p, ok := starts[authEnd]; ok {
			if firstMacro == nil {
				firstMacro = &p
			}
			authEnd = p.pos + len(p.macro) + 1 // the loop steps past the closing delimiter
			continue
		}
		if c := tmpl[authEnd]; c == '/' || c == '?' || c == '#' {
			break
		}
	}
	authority := tmpl[authStart:authEnd]
	userEnd := strings.LastIndexByte(authority, '@') // -1 without user info
	hostPort := authority[userEnd+1:]

	if firstMacro != nil {
		rel := firstMacro.pos - authStart
		colon := userEnd + 1 + portColon(hostPort) // offset in authority
		where := "host"
		switch {
		case rel < userEnd:
			where = "user info"
		case rel > colon:
			where = "port"
		}
		return "", "", refuse(*firstMacro, where)
	}
	if name := hostPort[:portColon(hostPort)]; name == "" || name == "[]" {
		return "", "", lintErrorf(authStart, "template has no host after %q", tmpl[:authStart])
	}
	return scheme, hostPort, nil
}

// portColon returns the index of the ":" that starts the port in host[:port],
// or len(hostPort) when there is none. Colons inside an IPv6 literal do not
// count.
func portColon(hostPort string) int {
	i := strings.LastIndexByte(hostPort, ':')
	if i < 0 || i < strings.LastIndexByte(hostPort, ']') {
		return len(hostPort)
	}
	return i
}

// isSchemeChar reports whether c may appear at index i of a URL scheme
// (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
func isSchemeChar(c byte, i int) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9', c == '+', c == '-', c == '.':
		return i > 0
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// newTemplate is a Template of parts, each macro numbered once in the
// order it first appears (a macro used twice is looked up once): the URL
// template and the body template both start here.
func newTemplate(raw string, style Style, parts []part) *Template {
	t := &Template{raw: raw, style: style, parts: parts}
	seen := make(map[string]int)
	for i, p := range parts {
		if p.macro == "" {
			continue
		}
		idx, ok := seen[p.macro]
		if !ok {
			idx = len(t.macros)
			seen[p.macro] = idx
			t.macros = append(t.macros, p.macro)
		}
		parts[i].idx = idx
	}
	return t
}
