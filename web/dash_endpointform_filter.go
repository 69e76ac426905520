package web

// The endpoint form's filter rows: translating between the form's field /
// operator / value rows and the stored filter, and the live preview of which
// recent events the filter would deliver.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/worker/filter"
	"github.com/labstack/echo/v4"
)

// withFilterPreview fills in the form's filter preview (shown after a
// submit, and by the "check" button without JavaScript).
func (s *Server) withFilterPreview(c echo.Context, f endpointform.Form, in endpointInput) (endpointform.Form, error) {
	var err error
	f.FilterPreview, err = s.filterPreview(c.Request().Context(), in.Filter, f.Errors["filter"], in.EventTypes)
	return f, err
}

// previewRequested reports whether the form was submitted with the filter
// builder's "check" button: the form comes back with the preview, and
// nothing is saved.
func previewRequested(c echo.Context) bool { return c.FormValue("filter_preview") != "" }

// withBlankRows appends the empty rows the form offers.
func withBlankRows(rows []endpointform.FilterRow) []endpointform.FilterRow {
	for range max(blankFilterRows, 3-len(rows)) {
		rows = append(rows, endpointform.FilterRow{Op: "eq"})
	}
	return rows
}

// filterFromForm builds the filter from the builder: each filled row is a
// condition, the JSON box adds its own, all combined by AND. It returns the
// rows as typed (blank ones dropped), the filter (nil for none) and what is
// wrong, if anything, for the filter field. The result is validated like
// the API's (validateEndpoint), so the form and the API accept the same.
func filterFromForm(fields, ops, values []string, rawJSON string) ([]endpointform.FilterRow, json.RawMessage, string) {
	var rows []endpointform.FilterRow
	doc := map[string]map[string]json.RawMessage{} // path → operator → operand
	var order []string
	for i := range fields {
		r := endpointform.FilterRow{Field: strings.TrimSpace(fields[i])}
		if i < len(ops) {
			r.Op = ops[i]
		}
		if i < len(values) {
			r.Value = strings.TrimSpace(values[i])
		}
		if r.Field == "" && r.Value == "" {
			continue
		}
		rows = append(rows, r)
		n := len(rows)
		key, ok := filterOpKeys[r.Op]
		switch {
		case r.Field == "":
			return rows, nil, fmt.Sprintf("condition %d has a value but no field", n)
		case !ok:
			return rows, nil, fmt.Sprintf("condition %d: choose an operator", n)
		case strings.HasPrefix(r.Field, "$"):
			return rows, nil, fmt.Sprintf("condition %d: a field is a payload path such as status or customer.country; put $and, $or and $not in the JSON box", n)
		}
		var operand json.RawMessage
		switch r.Op {
		case "exists":
			operand = json.RawMessage("true")
		case "not_exists":
			operand = json.RawMessage("false")
		case "in", "nin":
			var items []json.RawMessage
			for _, item := range strings.Split(r.Value, ",") {
				if item = strings.TrimSpace(item); item != "" {
					items = append(items, formValueJSON(item))
				}
			}
			if len(items) == 0 {
				return rows, nil, fmt.Sprintf("condition %d (%s): list the values, separated by commas", n, r.Field)
			}
			operand, _ = json.Marshal(items)
		default:
			if r.Value == "" {
				return rows, nil, fmt.Sprintf("condition %d (%s): enter a value (write \"\" for an empty string)", n, r.Field)
			}
			operand = formValueJSON(r.Value)
		}
		if doc[r.Field] == nil {
			doc[r.Field] = map[string]json.RawMessage{}
			order = append(order, r.Field)
		}
		if _, dup := doc[r.Field][key]; dup {
			return rows, nil, fmt.Sprintf("condition %d repeats %s %s; use \"is one of\" or the JSON box", n, r.Field, key)
		}
		doc[r.Field][key] = operand
	}
	out := map[string]json.RawMessage{}
	for _, field := range order {
		ops := doc[field]
		if eq, ok := ops["$eq"]; ok && len(ops) == 1 && eq[0] != '{' {
			out[field] = eq // a plain value reads best
			continue
		}
		out[field], _ = json.Marshal(ops)
	}

	rawJSON = strings.TrimSpace(rawJSON)
	if rawJSON != "" {
		var extra map[string]json.RawMessage
		if _, err := filter.Compile([]byte(rawJSON)); err != nil {
			return rows, nil, "JSON: " + err.Error()
		}
		_ = json.Unmarshal([]byte(rawJSON), &extra) // it compiled, so it is an object
		for k := range extra {
			if _, clash := out[k]; clash {
				// The same key in both: keep both conditions with $and.
				rowsDoc, _ := json.Marshal(out)
				combined, _ := json.Marshal(map[string]any{"$and": []json.RawMessage{rowsDoc, json.RawMessage(rawJSON)}})
				return rows, combined, ""
			}
		}
		maps.Copy(out, extra)
	}
	if len(out) == 0 {
		return rows, nil, ""
	}
	b, _ := json.Marshal(out)
	return rows, b, ""
}

// formValueJSON reads a value typed in the builder: a number, true, false
// or null as such, a JSON string literal ("12") as that string, anything
// else as text.
func formValueJSON(v string) json.RawMessage {
	switch {
	case v == "true" || v == "false" || v == "null":
		return json.RawMessage(v)
	case strings.HasPrefix(v, `"`) && json.Valid([]byte(v)):
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			b, _ := json.Marshal(s)
			return b
		}
	case isNumberText(v):
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// isNumberText reports whether v is spelled as a JSON number.
func isNumberText(v string) bool {
	var n json.Number
	return json.Unmarshal([]byte(v), &n) == nil && v != "" && v[0] != '"' && !strings.ContainsAny(v, " \t\n\r")
}

// filterToForm splits a stored filter into builder rows (a field with one
// operator and plain operands) and the JSON box (everything else).
func filterToForm(stored []byte) ([]endpointform.FilterRow, string) {
	if stored == nil {
		return nil, ""
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(stored, &doc) != nil {
		return nil, string(stored)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows []endpointform.FilterRow
	rest := map[string]json.RawMessage{}
	for _, k := range keys {
		if r, ok := filterRowOf(k, doc[k]); ok {
			rows = append(rows, r)
		} else {
			rest[k] = doc[k]
		}
	}
	if len(rest) == 0 {
		return rows, ""
	}
	b, _ := json.MarshalIndent(rest, "", "  ")
	return rows, string(b)
}

// filterRowOf is one top-level condition as a builder row, when a row can
// say it exactly.
func filterRowOf(field string, v json.RawMessage) (endpointform.FilterRow, bool) {
	if strings.HasPrefix(field, "$") {
		return endpointform.FilterRow{}, false
	}
	if text, ok := formValueText(v); ok {
		return endpointform.FilterRow{Field: field, Op: "eq", Value: text}, true
	}
	var ops map[string]json.RawMessage
	if json.Unmarshal(v, &ops) != nil || len(ops) != 1 {
		return endpointform.FilterRow{}, false
	}
	for key, operand := range ops {
		switch key {
		case "$exists":
			switch string(operand) {
			case "true":
				return endpointform.FilterRow{Field: field, Op: "exists"}, true
			case "false":
				return endpointform.FilterRow{Field: field, Op: "not_exists"}, true
			}
		case "$in", "$nin":
			var items []json.RawMessage
			if json.Unmarshal(operand, &items) != nil || len(items) == 0 {
				return endpointform.FilterRow{}, false
			}
			texts := make([]string, len(items))
			for i, it := range items {
				t, ok := formValueText(it)
				if !ok || strings.Contains(t, ",") {
					return endpointform.FilterRow{}, false
				}
				texts[i] = t
			}
			return endpointform.FilterRow{Field: field, Op: key[1:], Value: strings.Join(texts, ", ")}, true
		case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
			if t, ok := formValueText(operand); ok {
				return endpointform.FilterRow{Field: field, Op: key[1:], Value: t}, true
			}
		}
	}
	return endpointform.FilterRow{}, false
}

// formValueText is a scalar operand as the builder shows it, such that
// formValueJSON reads it back to the same value.
func formValueText(v json.RawMessage) (string, bool) {
	v = json.RawMessage(strings.TrimSpace(string(v)))
	if len(v) == 0 || v[0] == '{' || v[0] == '[' {
		return "", false
	}
	if v[0] != '"' {
		return string(v), true // number, true, false, null
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	if s == "" || s != strings.TrimSpace(s) || string(formValueJSON(s)) != string(mustJSON(s)) {
		return string(mustJSON(s)), true // a string that would read as something else: quoted
	}
	return s, true
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// filterPreview checks the filter against the last events of the
// endpoint's types.
func (s *Server) filterPreview(ctx context.Context, raw json.RawMessage, problem string, eventTypes []string) (endpointform.FilterPreview, error) {
	var p endpointform.FilterPreview
	if problem != "" {
		p.Error = problem
		return p, nil
	}
	var f *filter.Filter
	if raw == nil {
		p.NoFilter = true
	} else {
		var err error
		if f, err = filter.Compile(raw); err != nil {
			p.Error = err.Error()
			return p, nil
		}
	}
	types := []string{}
	for _, t := range eventTypes {
		if t = strings.TrimSpace(t); t != "" && t != "*" {
			types = append(types, t)
		}
	}
	events, err := s.q.EndpointFilterPreviewEvents(ctx, db.EndpointFilterPreviewEventsParams{
		ScanRows: filterPreviewScan, EventTypes: types, MaxRows: maxFilterPreviewEvents})
	if err != nil {
		return p, fmt.Errorf("filter preview events: %w", err)
	}
	for _, e := range events {
		match := f == nil || f.Match(e.Payload)
		if match {
			p.Matched++
		}
		excerpt := string(compactJSON(e.Payload))
		if len(excerpt) > 160 {
			excerpt = strings.ToValidUTF8(excerpt[:160], "") + "…"
		}
		p.Events = append(p.Events, endpointform.PreviewEvent{ID: e.ID.String(), Type: e.Type,
			At: e.CreatedAt.UTC().Format("2006-01-02 15:04:05"), Excerpt: excerpt, Match: match})
	}
	return p, nil
}

// endpointFilterPreview: POST /endpoints/filter-preview (htmx, as the
// builder is edited) — the form's filter against recent events.
func (s *Server) endpointFilterPreview(c echo.Context) error {
	f, in := s.formOf(c, endpointform.Form{Kind: "webhook"})
	p, err := s.filterPreview(c.Request().Context(), in.Filter, f.Errors["filter"], in.EventTypes)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.FilterPreviewFragment(p))
}
