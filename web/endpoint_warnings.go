package web

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/postback"
)

// fieldWarning is a problem found at save time that does not stop saving:
// the API answers it beside the saved endpoint, the form shows it beside
// its field.
type fieldWarning struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// warningEvents is how many recent events of the endpoint's types the
// unknown-macro check reads (of the newest filterPreviewScan events, the
// filter preview's bounded walk down the primary key).
const warningEvents = 20

// endpointWarnings lints a valid configuration for what would send but
// probably not as meant: in a postback template, tokens of another macro
// style and lone delimiters, a preset's required parameter left out, and
// macros that none of the last events of the endpoint's types carries
// (those deliveries would fail as missing_field). Webhooks have none.
func (s *Server) endpointWarnings(ctx context.Context, cfg endpointConfig) ([]fieldWarning, error) {
	out := []fieldWarning{}
	if cfg.Kind != "postback" {
		return out, nil
	}
	t, err := postback.ParseStyle(cfg.URL, cfg.MacroStyle)
	if err != nil {
		return out, nil // a stored template a later rule refuses: its error is shown elsewhere
	}
	add := func(ws []postback.Warning) {
		for _, w := range ws {
			out = append(out, fieldWarning{Field: "url", Code: w.Code, Message: w.Msg})
		}
	}
	add(t.Warnings())
	if p, ok := postback.PresetByID(cfg.Preset); ok {
		add(p.ParamWarnings(t))
	}

	var fromPayload []string
	for _, m := range t.Macros() {
		if !postback.IsBuiltin(m) {
			fromPayload = append(fromPayload, m)
		}
	}
	if len(fromPayload) == 0 {
		return out, nil
	}
	types := []string{}
	for _, et := range cfg.EventTypes {
		if et = strings.TrimSpace(et); et != "" && et != "*" {
			types = append(types, et)
		}
	}
	events, err := s.q.EndpointFilterPreviewEvents(ctx, db.EndpointFilterPreviewEventsParams{
		ScanRows: filterPreviewScan, EventTypes: types, MaxRows: warningEvents})
	if err != nil {
		return nil, fmt.Errorf("macro lint events: %w", err)
	}
	if len(events) == 0 {
		return out, nil // nothing to judge by yet
	}
	carried := map[string]bool{}
	for _, e := range events {
		fields, err := postback.PayloadFields(e.Payload)
		if err != nil {
			continue
		}
		for k := range fields {
			carried[k] = true
		}
		for _, m := range fromPayload { // dotted paths into nested objects
			if !carried[m] && postback.PayloadHas(fields, m) {
				carried[m] = true
			}
		}
	}
	var known []string
	for k := range carried {
		if !slices.Contains(fromPayload, k) || !strings.Contains(k, ".") {
			known = append(known, k)
		}
	}
	of := "events"
	if len(types) > 0 {
		of = "events of types " + strings.Join(types, ", ")
	}
	sort.Strings(known)
	if len(known) > 12 {
		known = append(known[:12], "…")
	}
	defaults := t.Defaults()
	for _, m := range fromPayload {
		if carried[m] {
			continue
		}
		what, fails := "a top-level field", "would fail as missing_field"
		if strings.Contains(m, ".") {
			what = "the nested path"
		}
		if _, ok := defaults[m]; ok {
			fails = "would send its default"
		}
		out = append(out, fieldWarning{Field: "url", Code: postback.WarnUnknownMacro, Message: fmt.Sprintf(
			"none of the last %d %s has %s %q, so %s %s; check the spelling (their fields: %s)",
			len(events), of, what, m, cfg.MacroStyle.Token(m), fails, strings.Join(known, ", "))})
	}
	return out, nil
}

// configForWarnings is what endpointWarnings needs of a stored endpoint.
func configForWarnings(e db.Endpoint) endpointConfig {
	return endpointConfig{Kind: e.Kind, URL: e.URL, MacroStyle: postback.Style(e.MacroStyle), Preset: e.Preset, EventTypes: e.EventTypes}
}
