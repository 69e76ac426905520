package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/portal"
)

// The portal's endpoint form changes what a partner owns, its URL (or
// postback template) and custom headers, through the operator's edit
// (editEndpoint: validation, SSRF guard, audit); everything else (event
// types, retries, rate) stays the operator's.

// portalEditPage: GET /portal/endpoints/:id/edit
func (s *Server) portalEditPage(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	e := r.Endpoint
	f := portal.Edit{EndpointID: e.ID, Name: e.Name, Kind: e.Kind, URL: e.URL, CSRF: portalOf(c).CSRF, Errors: map[string]string{}}
	f.Headers = maskedHeaderLines(e.Headers)
	if e.Kind == "postback" {
		if f.Preview, err = s.portalPostbackPreview(c.Request().Context(), e, e.URL); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, portal.EditPage(s.portalMeta(c, "Change "+e.Name, portal.NavEndpoints), f))
}

// portalEditInput is the stored endpoint with the form's URL and headers:
// the input the operator's validation checks.
func portalEditInput(c echo.Context, cur db.Endpoint) (portal.Edit, endpointInput, []fieldError) {
	f := portal.Edit{EndpointID: cur.ID, Name: cur.Name, Kind: cur.Kind, URL: strings.TrimSpace(c.FormValue("url")),
		Headers: c.FormValue("headers"), CSRF: portalOf(c).CSRF, Errors: map[string]string{}}
	in := inputFromEndpoint(cur)
	in.URL = f.URL
	var read []fieldError
	headers, msg := parseHeaderLines(f.Headers)
	if msg != "" {
		read = append(read, fieldError{"headers", msg})
	}
	in.Headers = headers
	return f, in, read
}

// portalEditSave: POST /portal/endpoints/:id/edit
func (s *Server) portalEditSave(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	// A new URL's host is looked up before the row is locked (the lookup
	// may take seconds); its refusal is one of the edit's problems, so
	// nothing is written and the form shows every problem at once.
	var resolved []fieldError
	if typed := strings.TrimSpace(c.FormValue("url")); typed != r.Endpoint.URL {
		if msg := s.checkPartnerURL(ctx, r.Endpoint.Kind, typed); msg != "" {
			resolved = append(resolved, fieldError{"url", msg})
		}
	}
	var f portal.Edit
	_, errs, err := s.editEndpoint(ctx, r.Endpoint.ID, portalOf(c).actor(), urlSetByPartner, func(cur db.Endpoint) (endpointInput, []fieldError, error) {
		if cur.PartnerID != pid { // cannot happen: endpoints never change partner
			return endpointInput{}, nil, notFound("endpoint")
		}
		var in endpointInput
		var read []fieldError
		f, in, read = portalEditInput(c, cur)
		return in, append(resolved, read...), nil
	})
	var ae *apiError
	if errors.As(err, &ae) && ae.Field != "" && ae.Status < 500 {
		errs = append(errs, fieldError{ae.Field, ae.Message})
	} else if err != nil {
		return err
	}
	if len(errs) > 0 {
		for _, e := range errs {
			f.Errors[e.Field] = e.Message
		}
		if f.Kind == "postback" {
			if f.Preview, err = s.portalPostbackPreview(ctx, r.Endpoint, f.URL); err != nil {
				return err
			}
		}
		if isHTMX(c) {
			return s.render(c, http.StatusUnprocessableEntity, portal.EditForm(f))
		}
		return s.render(c, http.StatusUnprocessableEntity, portal.EditPage(s.portalMeta(c, "Change "+f.Name, portal.NavEndpoints), f))
	}
	s.addFlash(c, layout.FlashSuccess, "Saved: new deliveries go to the new settings.")
	return redirectAfterPost(c, portalEndpointPath(r.Endpoint.ID))
}

// portalPreview: POST /portal/endpoints/:id/preview (htmx, as the template
// is typed) — the template filled with a sample conversion.
func (s *Server) portalPreview(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	p, err := s.portalPostbackPreview(c.Request().Context(), r.Endpoint, strings.TrimSpace(c.FormValue("url")))
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.PreviewFragment(p))
}

// portalPostbackPreview is the operator form's preview of a postback
// template, in the endpoint's saved macro style, preset and event types
// (the portal edits the URL only), with its save-time warnings.
func (s *Server) portalPostbackPreview(ctx context.Context, e db.Endpoint, url string) (endpointform.Preview, error) {
	return s.preview(ctx, endpointform.Form{Kind: e.Kind, URL: url, MacroStyle: e.MacroStyle, Preset: e.Preset,
		EventTypes: strings.Join(e.EventTypes, ",")})
}

// portalFormTestFire: POST /portal/endpoints/:id/test-fire — the form's
// values, unsaved, sent once and signed with the endpoint's own secrets,
// so the partner sees its receiver accept them before saving.
func (s *Server) portalFormTestFire(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	f, in, read := portalEditInput(c, r.Endpoint)
	for _, e := range read {
		f.Errors[e.Field] = e.Message
	}
	// Stored header values go only to the saved URL.
	if fe := maskedToOtherURL(r.Endpoint, in.URL, in.Headers); fe != nil {
		return s.render(c, http.StatusUnprocessableEntity, portal.TestResult(credentialRefused(*fe)))
	}
	if _, err := s.unmaskHeaders(r.Endpoint, in.Headers); err != nil {
		return err
	}
	in.Filter = nil // a test send ignores the filter
	// The partner guard judges and dials what the partner typed, and the
	// saved URL when the partner set it; an operator's saved URL is
	// dialled as the worker dials it.
	o := fireOpts{portal: true, partner: in.URL != r.Endpoint.URL || r.Endpoint.URLSetBy == urlSetByPartner}
	guard := s.guard
	if o.partner {
		guard = s.partnerGuard
	}
	cfg, errs := validateEndpoint(in, guard)
	for _, e := range errs {
		if _, ok := f.Errors[e.Field]; !ok {
			f.Errors[e.Field] = e.Message
		}
	}
	if len(f.Errors) > 0 {
		res := endpoint.TestResult{Outcome: "permanent", Class: "invalid_request", Error: "Fix the form first: " + strings.Join(sortedErrors(f.Errors), "; ")}
		res.Verdicts = s.verdicts(ctx, in.URL, o)
		return s.render(c, http.StatusOK, portal.TestResult(res))
	}
	// Signed with the endpoint's own keys, also for another URL: see
	// maskedToOtherURL for why the signature is not a credential sent.
	keys, err := s.activeKeys(ctx, r.Endpoint.ID)
	if err != nil {
		return err
	}
	if o.egress, err = s.fireEgress(ctx, r.Endpoint.ID, strings.TrimSpace(in.URL) == r.Endpoint.URL); err != nil {
		return err
	}
	res := s.testFire(ctx, cfg, keys, o)
	if err := audit(ctx, s.q, portalOf(c).actor(), "endpoint.test_fire", "endpoint", r.Endpoint.ID,
		map[string]any{"outcome": res.Outcome, "status_code": res.StatusCode, "unsaved": true}); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.TestResult(res))
}
