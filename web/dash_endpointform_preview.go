package web

// The endpoint form's live helpers: the postback preview with its lint, the
// retry window, and the test fire of unsaved values.

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/worker/postback"
	"github.com/labstack/echo/v4"
)

// endpointPreview: POST /endpoints/preview (htmx, as the template, its
// macro style or the event types are edited)
func (s *Server) endpointPreview(c echo.Context) error {
	f := endpointform.Form{Kind: "postback", URL: strings.TrimSpace(c.FormValue("url")), MacroStyle: c.FormValue("macro_style"),
		EventTypes: c.FormValue("event_types"), Preset: c.FormValue("preset")}
	p, err := s.preview(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.PreviewFragment(p))
}

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
	for _, seg := range t.Preview(postback.SampleValues(id.String(), s.now())) {
		p.Segments = append(p.Segments, endpointform.Segment{Text: seg.Text, Macro: seg.Macro, Known: seg.Known, Missing: seg.Missing})
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

// retryWindowFragment: GET /endpoints/retry-window?max_attempts=N
func (s *Server) retryWindowFragment(c echo.Context) error {
	n, err := strconv.Atoi(strings.TrimSpace(c.QueryParam("max_attempts")))
	text := "enter 1 to 50 attempts"
	if err == nil && n >= 1 && n <= 50 {
		text = retryWindow(n)
	}
	return s.render(c, http.StatusOK, endpointform.RetryWindow(text))
}

// formTestFire: POST /endpoints/test-fire (operator) — the form's current
// values, unsaved, sent once to show that the endpoint answers.
func (s *Server) formTestFire(c echo.Context) error {
	kind := c.FormValue("kind")
	if kind != "postback" {
		kind = "webhook"
	}
	f, in := s.formOf(c, endpointform.Form{Kind: kind, PartnerID: 1})
	delete(f.Errors, "filter") // a test send ignores the filter
	in.Filter = nil
	// From an edit form, masked header values stand for the stored ones.
	if id, ok := parseID(c.FormValue("endpoint_id")); ok {
		cur, err := s.q.EndpointGet(c.Request().Context(), id)
		if err != nil && !db.NoRows(err) {
			return err
		}
		if err == nil {
			if _, err := s.unmaskHeaders(cur, in.Headers); err != nil {
				return err
			}
		}
	}
	cfg, errs := validateEndpoint(in, s.guard)
	for _, e := range errs {
		if e.Field == "partner_id" || e.Field == "name" || e.Field == "filter" {
			continue // not needed to send a test
		}
		if _, ok := f.Errors[e.Field]; !ok {
			f.Errors[e.Field] = e.Message
		}
	}
	if len(f.Errors) > 0 {
		res := endpoint.TestResult{Outcome: "permanent", Class: "invalid_request", Error: "Fix the form first: " + strings.Join(sortedErrors(f.Errors), "; ")}
		res.Verdicts = s.verdicts(c.Request().Context(), in.URL)
		return s.render(c, http.StatusOK, endpoint.TestResultView(res))
	}
	res := s.testFire(c.Request().Context(), cfg, nil)
	return s.render(c, http.StatusOK, endpoint.TestResultView(res))
}
