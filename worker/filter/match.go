package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Evaluating compiled conditions against a payload.

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
