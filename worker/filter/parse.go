package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Parsing: JSON with duplicate keys refused and nesting bounded.

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
