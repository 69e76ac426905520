package postback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Built-in macro names. They take precedence over payload fields of the same
// name, so a template's meaning cannot change with the payload's shape.
const (
	MacroEventID   = "event_id"
	MacroEventType = "event_type"
	MacroTimestamp = "timestamp"
	MacroAttempt   = "attempt"
)

// IsBuiltin reports whether name is filled by hookline rather than from the
// event payload.
func IsBuiltin(name string) bool {
	switch name {
	case MacroEventID, MacroEventType, MacroTimestamp, MacroAttempt:
		return true
	}
	return false
}

// Values supplies macro values for one delivery attempt.
type Values struct {
	EventID   string    // {event_id}: the event's id, the same on every retry
	EventType string    // {event_type}
	Timestamp time.Time // {timestamp}: this attempt's time, rendered as unix seconds
	Attempt   int       // {attempt}: 1 for the first attempt
	// Payload holds the event payload's top-level fields, as returned by
	// PayloadFields. Any other macro {name} takes Payload[name].
	Payload map[string]json.RawMessage
}

// MissingFieldError reports a macro the payload cannot fill. The worker
// records it as a permanent "missing_field" failure: retrying the same event
// cannot make the field appear.
type MissingFieldError struct {
	// Field is the macro name, which is the payload field's name.
	Field string
	// Found is "" when the payload has no such field, otherwise what it holds
	// instead of a string, number or boolean: "null", "an object",
	// "an array" or "invalid JSON"; or "not a number" for a payout the
	// endpoint's share cannot apply to.
	Found string
}

func (e *MissingFieldError) Error() string {
	if e.Found == "not a number" {
		return fmt.Sprintf("payload field %q is not a number, so the endpoint's payout share cannot apply to it", e.Field)
	}
	if e.Found == "" {
		return fmt.Sprintf("payload has no field %q required by the postback template", e.Field)
	}
	return fmt.Sprintf("payload field %q required by the postback template is %s, not a string, number or boolean", e.Field, e.Found)
}

// PayloadFields decodes an event payload into its top-level fields. The
// payload must be a JSON object. Values are kept as raw JSON so numbers keep
// their exact text: a payout of 12.50 must reach the tracker as "12.50", not
// as whatever a float64 round trip prints.
func PayloadFields(payload []byte) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("payload is not a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	return fields, nil
}

// Render returns the URL for one attempt. The template's literal text is
// copied unchanged; every macro is replaced by its value percent-encoded so
// that all bytes outside the RFC 3986 unreserved set (A-Z a-z 0-9 - . _ ~)
// become %XX. One rule serves every position: such a value can never add a
// path segment, a query parameter or a fragment, whatever the payload holds.
//
// A payload macro without a usable value returns a *MissingFieldError for the
// first such macro, unless that occurrence has a default and the field is
// absent or null. A built-in left at its zero value is a caller bug and
// returns a plain error.
func (t *Template) Render(v Values) (string, error) { return t.RenderRules(v, nil) }

// RenderRules is Render with an endpoint's rules applied to each value (see
// Rules.apply): the payout share, then the value maps. An unmapped value
// under "skip" or "fail" returns an *UnmappedError. r may be nil.
func (t *Template) RenderRules(v Values, r *Rules) (string, error) {
	vals, err := t.values(v, r, escape)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	n := len(t.raw)
	for _, s := range vals {
		n += len(s)
	}
	b.Grow(n)
	for i, p := range t.parts {
		if p.macro == "" {
			b.WriteString(p.literal)
			continue
		}
		b.WriteString(vals[i])
	}
	return b.String(), nil
}

// values returns, for each part that is a macro, its value passed through
// r and then enc (indexed like t.parts; literal parts are ""). The payload
// is read once per distinct macro.
func (t *Template) values(v Values, r *Rules, enc func(string) string) ([]string, error) {
	type looked struct {
		value string
		err   error
	}
	var small [12]looked
	seen := small[:0]
	if len(t.macros) > len(small) {
		seen = make([]looked, 0, len(t.macros))
	}
	for _, name := range t.macros {
		value, err := v.lookup(name)
		seen = append(seen, looked{value, err})
	}
	out := make([]string, len(t.parts))
	for i, p := range t.parts {
		if p.macro == "" {
			continue
		}
		l := seen[p.idx]
		value, fromDefault := l.value, false
		if l.err != nil {
			if !p.hasDef || !absent(l.err) {
				return nil, l.err
			}
			value, fromDefault = p.def, true
		}
		if r != nil {
			var err error
			if value, err = r.apply(p.macro, value, fromDefault, v); err != nil {
				return nil, err
			}
		}
		out[i] = enc(value)
	}
	return out, nil
}

// absent reports whether err is a payload field that is missing or null,
// the cases a default stands in for. A field of the wrong type (an object
// where a value belongs) still fails: that is a producer's bug a default
// would hide.
func absent(err error) bool {
	var m *MissingFieldError
	return errors.As(err, &m) && (m.Found == "" || m.Found == "null")
}

// Segment is one piece of a preview: either literal template text or one
// macro occurrence.
type Segment struct {
	// Text is the literal text, or the macro's encoded value as Render would
	// send it. For a missing macro it is the macro as written ("{click_id}"),
	// so the joined segments still read as the template.
	Text string
	// Macro is the macro name, or "" for literal text.
	Macro string
	// Known is true for built-ins and for fields present in the payload,
	// whatever their type; false suggests a misspelt macro.
	Known bool
	// Missing is true when Render would fail on this macro.
	Missing bool
	// Default is true when the macro's default stands in for the value.
	Default bool
	// Problem says why the endpoint's rules cannot send the value (a value
	// its map lacks under skip or fail, a payout that is not a number).
	Problem string
}

// Preview renders the template with whatever values exist and marks every
// macro occurrence, so the endpoint form can highlight unknown and missing
// macros as the user types. Unlike Render it never fails.
func (t *Template) Preview(v Values) []Segment { return t.PreviewRules(v, nil) }

// PreviewRules is Preview with an endpoint's rules applied, as
// RenderRules applies them.
func (t *Template) PreviewRules(v Values, r *Rules) []Segment {
	segments := make([]Segment, 0, len(t.parts))
	for _, p := range t.parts {
		if p.macro == "" {
			segments = append(segments, Segment{Text: p.literal})
			continue
		}
		value, err := v.lookup(p.macro)
		seg := Segment{Macro: p.macro, Known: IsBuiltin(p.macro) || v.has(p.macro)}
		fromDefault := false
		if err != nil && p.hasDef && absent(err) {
			value, err, fromDefault = p.def, nil, true
			seg.Default = true
		}
		if err == nil && r != nil {
			if value, err = r.apply(p.macro, value, fromDefault, v); err != nil {
				seg.Problem = err.Error()
			}
		}
		if err != nil {
			seg.Text, seg.Missing = p.raw(t.style), true
		} else {
			seg.Text = escape(value)
		}
		segments = append(segments, seg)
	}
	return segments
}

// lookup returns the unencoded value of macro name.
func (v Values) lookup(name string) (string, error) {
	switch name {
	case MacroEventID:
		if v.EventID == "" {
			return "", errors.New("postback: built-in {event_id} has no value")
		}
		return v.EventID, nil
	case MacroEventType:
		if v.EventType == "" {
			return "", errors.New("postback: built-in {event_type} has no value")
		}
		return v.EventType, nil
	case MacroTimestamp:
		// A zero time would render as -62135596800, which a tracker would
		// store rather than reject.
		if v.Timestamp.IsZero() {
			return "", errors.New("postback: built-in {timestamp} has no value")
		}
		return strconv.FormatInt(v.Timestamp.Unix(), 10), nil
	case MacroAttempt:
		if v.Attempt < 1 {
			return "", fmt.Errorf("postback: built-in {attempt} is %d, want 1 or more", v.Attempt)
		}
		return strconv.Itoa(v.Attempt), nil
	}

	raw, ok := v.Payload[name]
	if !ok {
		// A top-level field named "user.country" wins over the path, as
		// it did before paths existed, so no saved template changes meaning.
		if raw, ok = path(v.Payload, name); !ok {
			return "", &MissingFieldError{Field: name}
		}
	}
	value, found := scalar(raw)
	if found != "" {
		return "", &MissingFieldError{Field: name, Found: found}
	}
	return value, nil
}

// Lookup returns the unencoded value a payload gives macro name, as Render
// would send it before any rules apply, for callers checking a template
// against real events.
func (v Values) Lookup(name string) (string, error) { return v.lookup(name) }

// has reports whether the payload holds field name (a top-level field or a
// path), whatever its type.
func (v Values) has(name string) bool {
	if _, ok := v.Payload[name]; ok {
		return true
	}
	_, ok := path(v.Payload, name)
	return ok
}

// path walks a dotted name through nested objects ("user.country") and
// arrays ("items.0.sku"). Only the names that contain a "." and are not
// top-level fields get here, so a plain template never pays for it.
func path(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	first, rest, ok := strings.Cut(name, ".")
	if !ok {
		return nil, false
	}
	raw, ok := fields[first]
	for ok && rest != "" {
		var seg string
		seg, rest, _ = strings.Cut(rest, ".")
		raw, ok = child(raw, seg)
	}
	return raw, ok
}

// child is the member seg of a JSON object, or the element at index seg of
// an array.
func child(raw json.RawMessage, seg string) (json.RawMessage, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, false
	}
	switch t[0] {
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			return nil, false
		}
		v, ok := m[seg]
		return v, ok
	case '[':
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 {
			return nil, false
		}
		var a []json.RawMessage
		if json.Unmarshal(t, &a) != nil || i >= len(a) {
			return nil, false
		}
		return a[i], true
	}
	return nil, false
}

// scalar returns the text a JSON scalar contributes to a URL: strings
// decoded, numbers and booleans as their literal JSON text. For anything else
// it returns a description of what was found instead.
func scalar(raw json.RawMessage) (value, found string) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !json.Valid(t) {
		return "", "invalid JSON"
	}
	switch t[0] {
	case '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return "", "invalid JSON"
		}
		return s, ""
	case 'n':
		return "", "null"
	case '{':
		return "", "an object"
	case '[':
		return "", "an array"
	}
	// true, false, or a number: json.Valid vouched for the text, and keeping
	// it verbatim preserves trailing zeros and exponents.
	return string(t), ""
}

// escape percent-encodes every byte outside the RFC 3986 unreserved set.
func escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isUnreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0F])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
