package filter

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Literal operands and the comparison of payload values with them.

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
		return cmp.Compare(a.i, b.i)
	}
	// Never NaN, where cmp.Compare would differ from < and >: the parsers
	// refuse it.
	return cmp.Compare(a.f, b.f)
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
