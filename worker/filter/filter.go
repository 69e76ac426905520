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
	"math"
	"strconv"
	"strings"
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

// --- parsing: JSON with duplicate keys refused and nesting bounded ---

// object keeps a JSON object's keys in order, so errors name the first
// problem as the operator wrote it.
type object struct {
	keys []string
	vals []any
}

func parse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Msg: "is not valid JSON: data after the filter object"}
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, &Error{Msg: fmt.Sprintf("is nested more than %d levels deep", maxJSONDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			if depth == 0 {
				return nil, &Error{Msg: "is empty"}
			}
			return nil, &Error{Msg: "is not valid JSON: unexpected end of input"}
		}
		return nil, &Error{Msg: "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, &Error{Msg: "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
				}
				k, _ := kt.(string)
				if strings.ContainsRune(k, 0) {
					return nil, &Error{Msg: "contains a NUL character (\\u0000) in a key"}
				}
				if seen[k] {
					return nil, &Error{Msg: fmt.Sprintf("key %q appears twice in one object", k)}
				}
				seen[k] = true
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.keys, o.vals = append(o.keys, k), append(o.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, &Error{Msg: "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, &Error{Msg: "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
			}
			return a, nil
		}
		return nil, &Error{Msg: "is not valid JSON"}
	case string:
		if strings.ContainsRune(t, 0) {
			return nil, &Error{Msg: "contains a NUL character (\\u0000) in a string"}
		}
		return t, nil
	case json.Number:
		if !usableNumber(string(t)) {
			return nil, &Error{Msg: fmt.Sprintf("number %.40s is out of range", t)}
		}
		return t, nil
	default:
		return t, nil // bool or nil
	}
}

// usableNumber reports whether a JSON number's value fits a float64
// without overflowing or vanishing to zero, so comparisons mean what they
// say and any JSON store keeps it.
func usableNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	return f != 0 || !strings.ContainsAny(mantissa, "123456789")
}

// plain turns parsed objects into maps, the shape payloads decode to, for
// literal operands.
func plain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			m[k] = plain(t.vals[i])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// --- compiling ---

type compiler struct{ conditions int }

func join(path, part string) string {
	if path == "" {
		return part
	}
	return path + "." + part
}

func (c *compiler) count(path string) error {
	c.conditions++
	if c.conditions > MaxConditions {
		return &Error{Path: path, Msg: fmt.Sprintf("the filter has more than %d conditions", MaxConditions)}
	}
	return nil
}

func (c *compiler) doc(o *object, path string, depth int) (cond, error) {
	if depth > MaxDepth {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("$and, $or and $not are nested more than %d levels deep", MaxDepth)}
	}
	all := make(andCond, 0, len(o.keys))
	for i, k := range o.keys {
		v := o.vals[i]
		at := join(path, k)
		switch {
		case k == "$and" || k == "$or":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, &Error{Path: at, Msg: "must be a non-empty array of filter objects"}
			}
			if len(list) > MaxList {
				return nil, &Error{Path: at, Msg: fmt.Sprintf("has %d entries; the limit is %d", len(list), MaxList)}
			}
			subs := make([]cond, len(list))
			for j, e := range list {
				eat := fmt.Sprintf("%s[%d]", at, j)
				eo, ok := e.(*object)
				if !ok {
					return nil, &Error{Path: eat, Msg: "must be a filter object"}
				}
				sub, err := c.doc(eo, eat, depth+1)
				if err != nil {
					return nil, err
				}
				subs[j] = sub
			}
			if k == "$and" {
				all = append(all, andCond(subs))
			} else {
				all = append(all, orCond(subs))
			}
		case k == "$not":
			eo, ok := v.(*object)
			if !ok {
				return nil, &Error{Path: at, Msg: "must be a filter object"}
			}
			sub, err := c.doc(eo, at, depth+1)
			if err != nil {
				return nil, err
			}
			all = append(all, notCond{sub})
		case strings.HasPrefix(k, "$"):
			return nil, &Error{Path: at, Msg: "unknown operator here: a filter's keys are field paths or $and, $or, $not"}
		default:
			segs, err := splitPath(k)
			if err != nil {
				return nil, &Error{Path: at, Msg: err.Error()}
			}
			var ops []fieldOp
			if oo, ok := v.(*object); ok && isOperatorDoc(oo) {
				ops, err = c.ops(oo, at, depth)
				if err != nil {
					return nil, err
				}
			} else {
				if err := c.count(at); err != nil {
					return nil, err
				}
				ops = []fieldOp{eqOp{val: literal(v)}}
			}
			all = append(all, fieldCond{path: segs, ops: ops})
		}
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

func isOperatorDoc(o *object) bool {
	for _, k := range o.keys {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func splitPath(p string) ([]string, error) {
	if len(p) > MaxPath {
		return nil, fmt.Errorf("field path is %d characters; the limit is %d", len(p), MaxPath)
	}
	segs := strings.Split(p, ".")
	for _, s := range segs {
		if s == "" {
			return nil, errors.New("field path has an empty segment (write a.b, not a..b, .a or a.)")
		}
	}
	return segs, nil
}

func (c *compiler) ops(o *object, path string, depth int) ([]fieldOp, error) {
	if depth > MaxDepth {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("$not is nested more than %d levels deep", MaxDepth)}
	}
	ops := make([]fieldOp, 0, len(o.keys))
	for i, k := range o.keys {
		v := o.vals[i]
		at := path + "." + k
		if err := c.count(at); err != nil {
			return nil, err
		}
		switch k {
		case "$eq":
			ops = append(ops, eqOp{val: literal(v)})
		case "$ne":
			ops = append(ops, notOp{[]fieldOp{eqOp{val: literal(v)}}})
		case "$gt", "$gte", "$lt", "$lte":
			op, err := newCmp(k, v)
			if err != nil {
				return nil, &Error{Path: at, Msg: err.Error()}
			}
			ops = append(ops, op)
		case "$in", "$nin":
			list, ok := v.([]any)
			if !ok {
				return nil, &Error{Path: at, Msg: "must be an array of values, such as [\"BR\", \"PT\"]"}
			}
			if len(list) > MaxList {
				return nil, &Error{Path: at, Msg: fmt.Sprintf("has %d values; the limit is %d", len(list), MaxList)}
			}
			in := inOp{vals: make([]value, len(list))}
			for j, e := range list {
				in.vals[j] = literal(e)
			}
			if k == "$in" {
				ops = append(ops, in)
			} else {
				ops = append(ops, notOp{[]fieldOp{in}})
			}
		case "$exists":
			b, ok := v.(bool)
			if !ok {
				return nil, &Error{Path: at, Msg: "must be true or false"}
			}
			ops = append(ops, existsOp(b))
		case "$not":
			oo, ok := v.(*object)
			if !ok || !isOperatorDoc(oo) {
				return nil, &Error{Path: at, Msg: "must be an object of operators, such as {\"$in\": [\"rejected\"]}"}
			}
			sub, err := c.ops(oo, at, depth+1)
			if err != nil {
				return nil, err
			}
			ops = append(ops, notOp{sub})
		default:
			if strings.HasPrefix(k, "$") {
				return nil, &Error{Path: at, Msg: "unknown operator; use $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists or $not"}
			}
			return nil, &Error{Path: at, Msg: "an object of operators cannot also hold plain keys (to match an object literally, use $eq)"}
		}
	}
	return ops, nil
}

// --- values ---

// value is a literal operand: its JSON value (objects as maps, numbers as
// json.Number) and, for numbers, the parsed number.
type value struct {
	v     any
	num   number
	isNum bool
}

func literal(v any) value {
	p := plain(v)
	out := value{v: p}
	if n, ok := p.(json.Number); ok {
		out.num, out.isNum = parseNumber(string(n))
	}
	return out
}

// number is an int64 when the text is an integer that fits, otherwise a
// float64: integers such as click ids compare exactly, decimals closely.
type number struct {
	i     int64
	f     float64
	isInt bool
}

func parseNumber(s string) (number, bool) {
	// ParseInt's error allocates: only integers are tried as integers.
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return number{i: i, f: float64(i), isInt: true}, true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return number{}, false
	}
	return number{f: f}, true
}

func compareNumbers(a, b number) int {
	if a.isInt && b.isInt {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	}
	return 0
}

// numericString reports whether s is spelled as a JSON number ("12.50",
// "-3", "1e6"), and its value.
func numericString(s string) (number, bool) {
	if !isJSONNumber(s) {
		return number{}, false
	}
	return parseNumber(s)
}

func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// payloadNumber is a payload value as a number: a JSON number or a string
// spelled as one.
func payloadNumber(v any) (number, bool) {
	switch t := v.(type) {
	case json.Number:
		return parseNumber(string(t))
	case string:
		return numericString(t)
	}
	return number{}, false
}

// equal reports whether payload value a equals operand b.
func equal(a any, b value) bool {
	if b.isNum {
		n, ok := payloadNumber(a)
		return ok && compareNumbers(n, b.num) == 0
	}
	return deepEqual(a, b.v)
}

func deepEqual(a, b any) bool {
	switch bt := b.(type) {
	case nil:
		return a == nil
	case bool:
		at, ok := a.(bool)
		return ok && at == bt
	case string:
		at, ok := a.(string)
		return ok && at == bt
	case json.Number:
		an, ok := a.(json.Number)
		if !ok {
			return false
		}
		x, ok1 := parseNumber(string(an))
		y, ok2 := parseNumber(string(bt))
		return ok1 && ok2 && compareNumbers(x, y) == 0
	case []any:
		at, ok := a.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range bt {
			if !deepEqual(at[i], bt[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		at, ok := a.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for k, bv := range bt {
			av, ok := at[k]
			if !ok || !deepEqual(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// --- evaluation ---

type cond interface{ match(doc any) bool }

type andCond []cond

func (c andCond) match(doc any) bool {
	for _, s := range c {
		if !s.match(doc) {
			return false
		}
	}
	return true
}

type orCond []cond

func (c orCond) match(doc any) bool {
	for _, s := range c {
		if s.match(doc) {
			return true
		}
	}
	return false
}

type notCond struct{ c cond }

func (c notCond) match(doc any) bool { return !c.c.match(doc) }

type fieldCond struct {
	path []string
	ops  []fieldOp
}

func (c fieldCond) match(doc any) bool {
	v, present := lookup(doc, c.path)
	for _, op := range c.ops {
		if !op.holds(v, present) {
			return false
		}
	}
	return true
}

func lookup(v any, path []string) (any, bool) {
	for _, seg := range path {
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) || seg != strconv.Itoa(i) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// fieldOp is one operator on a path's value; present is false when the
// path does not exist in the payload.
type fieldOp interface {
	holds(v any, present bool) bool
}

// Operators hold for an array if they hold for the array itself or for
// any element. (Written out as loops: a closure per evaluation would
// allocate, and fan-out evaluates every filter for every event.)

type eqOp struct{ val value }

func (o eqOp) holds(v any, present bool) bool {
	if !present {
		return o.val.v == nil
	}
	if equal(v, o.val) {
		return true
	}
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if equal(e, o.val) {
				return true
			}
		}
	}
	return false
}

type inOp struct{ vals []value }

func (o inOp) holds(v any, present bool) bool {
	for _, val := range o.vals {
		if (eqOp{val}).holds(v, present) {
			return true
		}
	}
	return false
}

type existsOp bool

func (o existsOp) holds(_ any, present bool) bool { return present == bool(o) }

type notOp struct{ ops []fieldOp }

func (o notOp) holds(v any, present bool) bool {
	for _, op := range o.ops {
		if !op.holds(v, present) {
			return true
		}
	}
	return false
}

type cmpOp struct {
	op    string
	num   number
	str   string
	isNum bool
}

func newCmp(op string, v any) (cmpOp, error) {
	switch t := v.(type) {
	case json.Number:
		n, ok := parseNumber(string(t))
		if !ok {
			return cmpOp{}, errors.New("is not a usable number")
		}
		return cmpOp{op: op, num: n, isNum: true}, nil
	case string:
		return cmpOp{op: op, str: t}, nil
	}
	return cmpOp{}, fmt.Errorf("must be a number (compared numerically) or a string (compared as text), such as {%q: 1}", op)
}

func (o cmpOp) holds(v any, present bool) bool {
	if !present {
		return false
	}
	if o.holdsFor(v) {
		return true
	}
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if o.holdsFor(e) {
				return true
			}
		}
	}
	return false
}

func (o cmpOp) holdsFor(e any) bool {
	var c int
	if o.isNum {
		n, ok := payloadNumber(e)
		if !ok {
			return false
		}
		c = compareNumbers(n, o.num)
	} else {
		s, ok := e.(string)
		if !ok {
			return false
		}
		c = strings.Compare(s, o.str)
	}
	switch o.op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	}
	return c <= 0
}
