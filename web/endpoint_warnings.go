package web

import (
	"context"
	"fmt"
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
		add(p.MissingParams(t))
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
	}
	of := "events"
	if len(types) > 0 {
		of = "events of types " + strings.Join(types, ", ")
	}
	var known []string
	for k := range carried {
		known = append(known, k)
	}
	sort.Strings(known)
	if len(known) > 12 {
		known = append(known[:12], "…")
	}
	for _, m := range fromPayload {
		if !carried[m] {
			out = append(out, fieldWarning{Field: "url", Code: postback.WarnUnknownMacro, Message: fmt.Sprintf(
				"none of the last %d %s has a top-level field %q, so %s would fail as missing_field; check the spelling (their fields: %s)",
				len(events), of, m, cfg.MacroStyle.Token(m), strings.Join(known, ", "))})
		}
	}
	return out, nil
}

// configForWarnings is what endpointWarnings needs of a stored endpoint.
func configForWarnings(e db.Endpoint) endpointConfig {
	return endpointConfig{Kind: e.Kind, URL: e.URL, MacroStyle: postback.Style(e.MacroStyle), Preset: e.Preset, EventTypes: e.EventTypes}
}
