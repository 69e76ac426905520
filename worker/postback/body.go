package postback

import (
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Body formats of a POST postback.
const (
	BodyForm = "form" // application/x-www-form-urlencoded
	BodyJSON = "json" // application/json
)

// MaxBody bounds a body template.
const MaxBody = 16 << 10

// Body is a parsed POST postback body template: the same macros as a URL
// template ({click_id}, {user.country}, {payout|0}; or #name# in the hash
// style), each value encoded for where it stands. It is immutable and safe
// for concurrent use.
//
// In a form body a value is form-encoded (a space is "+", "&" and "=" are
// escaped), so it stays one field's value. In a JSON body a macro inside a
// string literal ("{click_id}") is escaped as JSON string content; a bare
// macro ({payout}) sends a number, true or false as it is and anything else
// as a JSON string, so no value can add a key or end the document.
//
// Only a delimiter pair around a valid macro name is a macro: the JSON
// object's own braces ({"a": 1}) are text.
type Body struct {
	format string
	t      *Template
	// inString is, per part, whether a JSON body's macro stands inside a
	// string literal.
	inString []bool
}

// ParseBody lints a body template of format (BodyForm or BodyJSON) whose
// macros are written in style. The template rendered with sample values
// must be a valid body of its format: JSON that parses, or a form that
// url.ParseQuery reads. Problems are *LintError.
func ParseBody(text, format string, style Style) (*Body, error) {
	if !style.Valid() {
		return nil, lintErrorf(-1, "unknown macro style %q; use braces or hash", string(style))
	}
	if format != BodyForm && format != BodyJSON {
		return nil, lintErrorf(-1, `body format %q is not "form" or "json"`, format)
	}
	if strings.TrimSpace(text) == "" {
		return nil, lintErrorf(-1, "body template is empty")
	}
	if len(text) > MaxBody {
		return nil, lintErrorf(-1, "body template is longer than %d bytes", MaxBody)
	}
	if !utf8.ValidString(text) {
		return nil, lintErrorf(-1, "body template is not UTF-8 text")
	}
	t := newTemplate(text, style, bodyParts(text, style))
	b := &Body{format: format, t: t, inString: jsonStringParts(t.parts, format)}

	// Every macro filled with a value full of characters that would break
	// out of their place unless encoded, then once more with a number.
	for _, sample := range []string{sampleValue + `"\` + "\n", "12.5"} {
		trial := b.encodeAll(func(int) string { return sample })
		if err := b.check(trial); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// check reports whether rendered is a valid body of b's format.
func (b *Body) check(rendered string) error {
	if b.format == BodyJSON {
		var v any
		if err := json.Unmarshal([]byte(rendered), &v); err != nil {
			return lintErrorf(-1, "body template is not valid JSON once rendered with sample values: %v", err)
		}
		return nil
	}
	if _, err := url.ParseQuery(rendered); err != nil {
		return lintErrorf(-1, "body template is not a valid form (name=value&...) once rendered with sample values: %v", err)
	}
	return nil
}

// Format is BodyForm or BodyJSON.
func (b *Body) Format() string { return b.format }

// ContentType is the body's media type.
func (b *Body) ContentType() string {
	if b.format == BodyJSON {
		return "application/json"
	}
	return "application/x-www-form-urlencoded"
}

// String returns the template as given.
func (b *Body) String() string { return b.t.raw }

// Macros returns the distinct macro names in order of first appearance.
func (b *Body) Macros() []string { return b.t.Macros() }

// Render returns the body for one attempt, with r applied to each value
// as RenderRules applies it (r may be nil). It fails as RenderRules does.
func (b *Body) Render(v Values, r *Rules) ([]byte, error) {
	vals, err := b.t.values(v, r, func(s string) string { return s })
	if err != nil {
		return nil, err
	}
	return []byte(b.encodeAll(func(i int) string { return vals[i] })), nil
}

// encodeAll joins the parts, each macro's raw value (value(i) for part
// i) encoded for its place.
func (b *Body) encodeAll(value func(i int) string) string {
	var sb strings.Builder
	sb.Grow(len(b.t.raw) + 32)
	for i, p := range b.t.parts {
		if p.macro == "" {
			sb.WriteString(p.literal)
			continue
		}
		v := value(i)
		switch {
		case b.format == BodyForm:
			sb.WriteString(url.QueryEscape(v))
		case b.inString[i]:
			q, _ := json.Marshal(v) // a JSON string: strip its quotes
			sb.Write(q[1 : len(q)-1])
		case v == "true" || v == "false" || isJSONNumber(v):
			sb.WriteString(v)
		default:
			q, _ := json.Marshal(v)
			sb.Write(q)
		}
	}
	return sb.String()
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	if s == "" || s[0] == '+' {
		return false
	}
	if _, err := parseDecimal(s); err != nil {
		return false
	}
	digits := strings.TrimPrefix(s, "-")
	// JSON allows no leading zeros ("012").
	return !(len(digits) > 1 && digits[0] == '0' && digits[1] != '.' && digits[1] != 'e' && digits[1] != 'E')
}

// bodyParts splits a body template into literal text and macros. Unlike a
// URL template's tokenizer it treats any delimiter that does not enclose a
// valid macro name (with an optional default) as text, since a JSON body
// is full of braces.
func bodyParts(text string, style Style) []part {
	open, closer := style.delims()
	var parts []part
	lit := 0
	for i := 0; i < len(text); i++ {
		if text[i] != open {
			continue
		}
		end := strings.IndexByte(text[i+1:], closer)
		if end < 0 {
			break
		}
		end += i + 1
		name, def, hasDef := strings.Cut(text[i+1:end], "|")
		if len(name) > maxMacroName || !validMacroName(name) || (hasDef && checkDefault(name, def, i, style) != nil) ||
			strings.ContainsRune(def, rune(open)) {
			continue
		}
		if i > lit {
			parts = append(parts, part{pos: lit, literal: text[lit:i]})
		}
		parts = append(parts, part{pos: i, macro: name, def: def, hasDef: hasDef})
		lit = end + 1
		i = end
	}
	if lit < len(text) {
		parts = append(parts, part{pos: lit, literal: text[lit:]})
	}
	return parts
}

// jsonStringParts marks, for a JSON body, the macros that stand inside a
// string literal, by following the quotes of the literal text around them.
func jsonStringParts(parts []part, format string) []bool {
	out := make([]bool, len(parts))
	if format != BodyJSON {
		return out
	}
	in, escaped := false, false
	for i, p := range parts {
		if p.macro != "" {
			out[i] = in
			escaped = false
			continue
		}
		for j := 0; j < len(p.literal); j++ {
			c := p.literal[j]
			switch {
			case escaped:
				escaped = false
			case in && c == '\\':
				escaped = true
			case c == '"':
				in = !in
			}
		}
	}
	return out
}

// Redacted is the body template with every macro as written: what a log
// or the event log shows instead of the values.
func (b *Body) Redacted() string { return b.t.raw }
