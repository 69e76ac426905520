package web

// The postback preview shared by the dashboard's and the portal's forms.

import (
	"context"

	"github.com/google/uuid"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/worker/postback"
)

// preview renders a postback form's template with a sample conversion,
// marking macros the sample cannot fill, and lists the save-time lint's
// warnings (the ones the API answers with).
func (s *Server) preview(ctx context.Context, f endpointform.Form) (endpointform.Preview, error) {
	if f.Kind != "postback" {
		return endpointform.Preview{}, nil
	}
	if f.URL == "" {
		return endpointform.Preview{Empty: true}, nil
	}
	style := postback.Style(f.MacroStyle)
	if style == "" {
		style = postback.StyleBraces
		if p, ok := postback.PresetByID(f.Preset); ok {
			style = p.MacroStyle()
		}
	}
	t, err := postback.ParseStyle(f.URL, style)
	if err != nil {
		return endpointform.Preview{Error: err.Error()}, nil
	}
	id, _ := uuid.NewV7()
	var p endpointform.Preview
	rules := previewRules(f)
	for _, seg := range t.PreviewRules(rules.Sample(postback.SampleValues(id.String(), s.now())), rules) {
		p.Segments = append(p.Segments, endpointform.Segment{Text: seg.Text, Macro: seg.Macro, Known: seg.Known, Missing: seg.Missing, Problem: seg.Problem})
	}
	ws, err := s.endpointWarnings(ctx, endpointConfig{Kind: "postback", URL: f.URL, MacroStyle: style, Preset: f.Preset, EventTypes: formEventTypes(f.EventTypes)})
	if err != nil {
		return p, err
	}
	for _, w := range ws {
		p.Warnings = append(p.Warnings, endpointform.Warning{Code: w.Code, Message: w.Message})
	}
	return p, nil
}
