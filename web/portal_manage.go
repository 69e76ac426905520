package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/portal"
)

// Endpoint management in the portal, for a partner its operator allows
// it (partners.portal_manage_endpoints): create an endpoint, disable and
// enable one, change its event types. Each goes through the operator's
// operation (createEndpoint, editEndpoint: validation, SSRF guard, audit),
// with the session's partner as the endpoint's partner and as the actor.
// Operators cannot delete endpoints (their history stays), so neither can
// a partner: disabling is what it gets.

// requirePortalManage refuses the management routes (403) to a partner
// its operator has not allowed them; the permission is read with the
// session on every request, so turning it off applies at once.
func (s *Server) requirePortalManage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := portalOf(c); p == nil || !p.ManageEndpoints {
			return &apiError{http.StatusForbidden, "portal_permission",
				"adding, disabling and enabling endpoints and changing their event types are done by your contact; ask them to allow it", ""}
		}
		return next(c)
	}
}

// portalNewKind is the kind the form is for: webhook unless postback.
func portalNewKind(kind string) string {
	if kind == "postback" {
		return "postback"
	}
	return "webhook"
}

// portalNewPage: GET /portal/endpoints/new?kind=
func (s *Server) portalNewPage(c echo.Context) error {
	f := portal.NewEndpoint{Kind: portalNewKind(c.QueryParam("kind")), MacroStyle: "braces", CSRF: portalOf(c).CSRF, Errors: map[string]string{}}
	if f.Kind == "postback" {
		f.Preview = endpointform.Preview{Empty: true}
	}
	return s.render(c, http.StatusOK, portal.NewPage(s.portalMeta(c, "New endpoint", portal.NavEndpoints), f))
}

// portalCreate: POST /portal/endpoints — the operator's create, for the
// session's partner, with the operator's defaults for every setting the
// form does not offer. The response shows the signing secret, once.
func (s *Server) portalCreate(c echo.Context) error {
	p := portalOf(c)
	kind := portalNewKind(c.FormValue("kind"))
	// Only what the form offers is read: retries, timeouts, rates,
	// filters and signing options stay the operator's defaults however the
	// request is crafted, and the partner is the session's.
	f := portal.NewEndpoint{Kind: kind, Name: c.FormValue("name"), URL: strings.TrimSpace(c.FormValue("url")),
		EventTypes: c.FormValue("event_types"), Headers: c.FormValue("headers"), CSRF: p.CSRF, Errors: map[string]string{}}
	if kind == "postback" {
		f.MacroStyle = c.FormValue("macro_style")
	}
	on := true
	in := endpointInput{PartnerID: p.PartnerID, Name: f.Name, Kind: kind, URL: f.URL, EventTypes: formEventTypes(f.EventTypes),
		MacroStyle: f.MacroStyle, Enabled: &on}
	var msg string
	if in.Headers, msg = parseHeaderLines(f.Headers); msg != "" {
		f.Errors["headers"] = msg
	}
	ctx := c.Request().Context()
	var err error
	if f.Preview, err = s.preview(ctx, endpointform.Form{Kind: kind, URL: f.URL, MacroStyle: f.MacroStyle, EventTypes: f.EventTypes}); err != nil {
		return err
	}
	// The partner's URL is judged by the partner guard, its name's
	// addresses too, and is recorded as the partner's: the worker dials it
	// through the same guard.
	cfg, errs := validateEndpoint(in, s.partnerGuard)
	cfg.URLSetBy = urlSetByPartner
	for _, e := range errs {
		if _, ok := f.Errors[e.Field]; !ok {
			f.Errors[e.Field] = e.Message
		}
	}
	if _, ok := f.Errors["url"]; !ok {
		if msg := s.checkPartnerURL(ctx, kind, f.URL); msg != "" {
			f.Errors["url"] = msg
		}
	}
	if len(f.Errors) == 0 {
		e, secret, err := s.createEndpoint(ctx, cfg, p.actor())
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Field != "" && ae.Status < 500:
			f.Errors[ae.Field] = ae.Message
		case err != nil:
			return err
		default:
			return s.portalCreated(c, e, secret, cfg)
		}
	}
	if isHTMX(c) {
		return s.render(c, http.StatusUnprocessableEntity, portal.NewForm(f))
	}
	return s.render(c, http.StatusUnprocessableEntity, portal.NewPage(s.portalMeta(c, "New endpoint", portal.NavEndpoints), f))
}

// portalCreated answers a create with the secret page: a full page (htmx
// retargets the body), so a reload cannot show the secret again.
func (s *Server) portalCreated(c echo.Context, e db.Endpoint, secret string, cfg endpointConfig) error {
	ws, err := s.endpointWarnings(c.Request().Context(), cfg)
	if err != nil {
		return err
	}
	v := portal.Created{EndpointID: e.ID, Name: e.Name, Kind: e.Kind, Secret: secret}
	for _, w := range ws {
		v.Warnings = append(v.Warnings, endpointform.Warning{Code: w.Code, Message: w.Message})
	}
	if isHTMX(c) {
		h := c.Response().Header()
		h.Set("HX-Retarget", "body")
		h.Set("HX-Reswap", "outerHTML")
		h.Set("HX-Push-Url", portalEndpointPath(e.ID))
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, http.StatusCreated, portal.CreatedPage(s.portalMeta(c, "Endpoint created", portal.NavEndpoints), v))
}

// portalNewPreview: POST /portal/endpoints/preview (htmx, as a new
// postback's template is typed).
func (s *Server) portalNewPreview(c echo.Context) error {
	p, err := s.preview(c.Request().Context(), endpointform.Form{Kind: "postback", URL: strings.TrimSpace(c.FormValue("url")),
		MacroStyle: c.FormValue("macro_style"), EventTypes: c.FormValue("event_types")})
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.PreviewFragment(p))
}

// portalManage is the endpoint page's management panel for e.
func portalManage(c echo.Context, e db.Endpoint) portal.Manage {
	return portal.Manage{EndpointID: e.ID, Enabled: e.Enabled, DisabledReason: e.DisabledReason,
		EventTypes: strings.Join(e.EventTypes, ", "), CSRF: portalOf(c).CSRF}
}

// portalEndpointEdit changes one of the session partner's endpoints
// through the operator's edit; the partner check is repeated under the row
// lock. It returns the endpoint and the input's problems.
func (s *Server) portalEndpointEdit(c echo.Context, change func(*endpointInput)) (db.Endpoint, []fieldError, error) {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return db.Endpoint{}, nil, err
	}
	pid := portalOf(c).PartnerID
	return s.editEndpoint(c.Request().Context(), r.Endpoint.ID, portalOf(c).actor(), urlSetByPartner, func(cur db.Endpoint) (endpointInput, []fieldError, error) {
		if cur.PartnerID != pid { // cannot happen: endpoints never change partner
			return endpointInput{}, nil, notFound("endpoint")
		}
		in := inputFromEndpoint(cur)
		change(&in)
		return in, nil, nil
	})
}

// portalSetEnabled: POST /portal/endpoints/:id/{disable,enable}. A
// disabled endpoint is sent nothing; its new deliveries wait queued until
// it is enabled (which also restarts its failure budget).
func (s *Server) portalSetEnabled(on bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		e, problems, err := s.portalEndpointEdit(c, func(in *endpointInput) { in.Enabled = &on })
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return conflict("", "the endpoint's settings need fixing first ("+problems[0].Field+": "+problems[0].Message+")")
		}
		done := "Endpoint disabled: nothing is sent to it; new events wait in its queue until you enable it."
		if on {
			done = "Endpoint enabled: its queued deliveries are being sent."
		}
		return s.portalManaged(c, e, done)
	}
}

// portalEventTypes: POST /portal/endpoints/:id/event-types — the event
// types the endpoint receives (empty: all), validated like the operator's.
func (s *Server) portalEventTypes(c echo.Context) error {
	typed := c.FormValue("event_types")
	e, problems, err := s.portalEndpointEdit(c, func(in *endpointInput) { in.EventTypes = formEventTypes(typed) })
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		r, err := s.portalEndpoint(c)
		if err != nil {
			return err
		}
		m := portalManage(c, r.Endpoint)
		m.EventTypes, m.Error = typed, problems[0].Message
		if problems[0].Field != "event_types" {
			m.Error = problems[0].Field + ": " + problems[0].Message
		}
		if !isHTMX(c) {
			return invalidField("event_types", m.Error)
		}
		return s.render(c, http.StatusUnprocessableEntity, portal.ManagePanel(m))
	}
	return s.portalManaged(c, e, "Event types saved: events sent from now on follow them.")
}

// portalManaged answers a saved change to e's management panel: the panel
// saying done to htmx, the endpoint page with done as its flash otherwise.
func (s *Server) portalManaged(c echo.Context, e db.Endpoint, done string) error {
	if !isHTMX(c) {
		s.addFlash(c, layout.FlashSuccess, done)
		return c.Redirect(http.StatusSeeOther, portalEndpointPath(e.ID))
	}
	m := portalManage(c, e)
	m.Saved = done
	return s.render(c, http.StatusOK, portal.ManagePanel(m))
}
