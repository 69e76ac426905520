// Package filter owns endpoint payload filters: a small MongoDB-style JSON
// language (the form Convoy and Outpost use) that decides whether an
// event's payload is delivered to an endpoint.
//
//	{"status": "approved", "payout": {"$gte": 1}, "country": {"$in": ["BR", "PT"]}}
//
// A filter is a JSON object. Each key is a dotted path into the payload
// ("customer.address.country"; a numeric segment indexes an array:
// "items.0.sku") or one of the logical operators $and, $or (arrays of
// filters) and $not (a filter). Keys are combined with AND. A path's value
// is either a literal (equality) or an object of operators, combined with
// AND:
//
//	$eq $ne            equal / not equal to a JSON value
//	$gt $gte $lt $lte  numeric comparison (a number operand) or string
//	                   comparison (a string operand)
//	$in $nin           equal to one of / none of a list
//	$exists            the path is present (true) or absent (false)
//	$not               the operators inside do not all hold
//
// Numbers compare by value (1, 1.0 and 1e0 are equal). A payload string
// spelled as a JSON number ("12.50") also compares as that number against
// a number operand, because trackers commonly send payouts and statuses as
// strings; a string operand only ever matches strings. An absent path
// matches $ne, $nin and {"$exists": false} and nothing else except a null
// operand ({"$eq": null} matches null or absent). When the payload value is
// an array, an operator holds if it holds for the array itself or for any
// element (for $ne and $nin: for no element).
//
// Compile validates a filter once (at save time) with an error naming the
// offending path; Match evaluates it. The package is pure: it reads nothing
// but its arguments.
package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Limits of a filter. They keep evaluation at fan-out cheap and bounded
// whatever an operator or an API client saves.
const (
	MaxBytes      = 16 << 10 // encoded size of a filter
	MaxDepth      = 8        // nesting of $and / $or / $not
	MaxList       = 256      // elements of $in / $nin / $and / $or
	MaxConditions = 256      // operators in the whole filter
	MaxPath       = 256      // characters of one dotted path
	maxJSONDepth  = 32       // nesting of the JSON text itself
)

// Error is a filter that does not compile: Path says where (such as
// "payout.$gte" or "$or[1].country.$in"), Msg what is wrong.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Filter is a compiled filter, safe for concurrent use.
type Filter struct {
	root cond
	raw  []byte
}

// JSON returns the filter as compiled, without insignificant whitespace.
func (f *Filter) JSON() []byte { return bytes.Clone(f.raw) }

// String returns the filter's JSON text.
func (f *Filter) String() string { return string(f.raw) }

// Compile validates raw and returns the filter. The error is an *Error.
func Compile(raw []byte) (*Filter, error) {
	if len(raw) > MaxBytes {
		return nil, &Error{Msg: fmt.Sprintf("is %d bytes; the limit is %d", len(raw), MaxBytes)}
	}
	v, err := parse(raw)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(*object)
	if !ok {
		return nil, &Error{Msg: "must be a JSON object, such as {\"status\": \"approved\"}"}
	}
	c := compiler{}
	root, err := c.doc(doc, "", 0)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	encode(&buf, doc)
	return &Filter{root: root, raw: buf.Bytes()}, nil
}

// encode writes a parsed value back as compact JSON in valid UTF-8 (the
// decoder has replaced invalid bytes and lone surrogates), which any JSON
// store accepts as it is.
func encode(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case *object:
		buf.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeString(buf, k)
			buf.WriteByte(':')
			encode(buf, t.vals[i])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			encode(buf, e)
		}
		buf.WriteByte(']')
	case string:
		encodeString(buf, t)
	case json.Number:
		buf.WriteString(string(t))
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	default:
		buf.WriteString("null")
	}
}

func encodeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

// Document is a decoded payload, for evaluating several filters against
// one event without decoding it again for each.
type Document struct{ v any }

// Decode decodes a JSON payload for MatchDocument.
func Decode(payload []byte) (Document, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Document{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Document{}, errors.New("data after the JSON value")
	}
	return Document{v}, nil
}

// Match reports whether payload (a JSON document) passes the filter. A
// payload that is not valid JSON passes no filter.
func (f *Filter) Match(payload []byte) bool {
	d, err := Decode(payload)
	if err != nil {
		return false
	}
	return f.MatchDocument(d)
}

// MatchDocument reports whether a decoded payload passes the filter.
func (f *Filter) MatchDocument(d Document) bool { return f.root.match(d.v) }
