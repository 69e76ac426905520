package filter

import (
	"errors"
	"fmt"
	"strings"
)

// Compiling a parsed filter into conditions, with errors that name the
// problem.

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
