package web

// The endpoint form's live helpers: the postback preview with its lint, the
// retry window, and the test fire of unsaved values.

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/labstack/echo/v4"
)

// endpointPreview: POST /endpoints/preview (htmx, as the template, its
// macro style or the event types are edited)
func (s *Server) endpointPreview(c echo.Context) error {
	f := endpointform.Form{Kind: "postback", URL: strings.TrimSpace(c.FormValue("url")), MacroStyle: c.FormValue("macro_style"),
		EventTypes: c.FormValue("event_types"), Preset: c.FormValue("preset"), Rules: rulesFormOf(c)}
	p, err := s.preview(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.PreviewFragment(p))
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
	var o fireOpts
	// From an edit form, masked header values stand for the stored ones,
	// which go only to the saved URL.
	if id, ok := parseID(c.FormValue("endpoint_id")); ok {
		cur, err := s.q.EndpointGet(c.Request().Context(), id)
		if err != nil && !db.NoRows(err) {
			return err
		}
		if err == nil {
			if fe := maskedToOtherURL(cur, in.URL, in.Headers); fe != nil {
				return s.render(c, http.StatusUnprocessableEntity, endpoint.TestResultView(credentialRefused(*fe)))
			}
			if _, err := s.unmaskHeaders(cur, in.Headers); err != nil {
				return err
			}
			// The saved URL of a partner's is dialled as the worker
			// dials it.
			o.partner = cur.URLSetBy == urlSetByPartner && strings.TrimSpace(in.URL) == cur.URL
			if o.egress, err = s.fireEgress(c.Request().Context(), id, strings.TrimSpace(in.URL) == cur.URL); err != nil {
				return err
			}
		}
	}
	guard := s.guard
	if o.partner {
		guard = s.partnerGuard
	}
	cfg, errs := validateEndpoint(in, guard)
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
		res.Verdicts = s.verdicts(c.Request().Context(), in.URL, o)
		return s.render(c, http.StatusOK, endpoint.TestResultView(res))
	}
	res := s.testFire(c.Request().Context(), cfg, nil, o)
	return s.render(c, http.StatusOK, endpoint.TestResultView(res))
}

// credentialRefused is the test fire's answer (422) when it would send a
// stored header value to another URL: nothing is sent.
func credentialRefused(fe fieldError) endpoint.TestResult {
	return endpoint.TestResult{Outcome: "permanent", Class: "invalid_request", Error: fe.Field + ": " + fe.Message}
}
