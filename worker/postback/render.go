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
	// "an array" or "invalid JSON".
	Found string
}

func (e *MissingFieldError) Error() string {
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
// first such macro. A built-in left at its zero value is a caller bug and
// returns a plain error.
func (t *Template) Render(v Values) (string, error) {
	for _, name := range t.macros {
		if _, err := v.lookup(name); err != nil {
			return "", err
		}
	}
	return t.render(func(name string) string {
		value, _ := v.lookup(name)
		return escape(value)
	}), nil
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
}

// Preview renders the template with whatever values exist and marks every
// macro occurrence, so the endpoint form can highlight unknown and missing
// macros as the user types. Unlike Render it never fails.
func (t *Template) Preview(v Values) []Segment {
	segments := make([]Segment, 0, len(t.parts))
	for _, p := range t.parts {
		if p.macro == "" {
			segments = append(segments, Segment{Text: p.literal})
			continue
		}
		_, inPayload := v.Payload[p.macro]
		seg := Segment{Macro: p.macro, Known: IsBuiltin(p.macro) || inPayload}
		if value, err := v.lookup(p.macro); err != nil {
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
		return "", &MissingFieldError{Field: name}
	}
	value, found := scalar(raw)
	if found != "" {
		return "", &MissingFieldError{Field: name, Found: found}
	}
	return value, nil
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
