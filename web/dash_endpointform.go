package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/worker/postback"
)

// endpointNew: GET /partners/:id/endpoints/new?kind=webhook|postback&preset=keitaro
func (s *Server) endpointNew(c echo.Context) error {
	p, err := s.partnerForForm(c)
	if err != nil {
		return err
	}
	kind := c.QueryParam("kind")
	if kind != "postback" {
		kind = "webhook"
	}
	f := s.blankForm(c, p, kind)
	if kind == "postback" {
		f.Preset = c.QueryParam("preset")
		if pr, ok := postback.PresetByID(f.Preset); ok {
			f.URL, f.Method, f.SuccessBodyContains = pr.Template, pr.Method, pr.SuccessBodyContains
			f.MacroStyle = string(pr.MacroStyle())
			f.Rules = presetRules(pr)
			if f.Name == "" {
				f.Name = pr.ID
			}
		} else {
			f.Preset = ""
		}
	}
	if f.Preview, err = s.preview(c.Request().Context(), f); err != nil {
		return err
	}
	if f.FilterPreview, err = s.filterPreview(c.Request().Context(), nil, "", nil); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.Page(s.meta(c, "New endpoint", layout.NavPartners), f))
}

func (s *Server) partnerForForm(c echo.Context) (db.Partner, error) {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return db.Partner{}, err
	}
	if p.ArchivedAt != nil {
		return db.Partner{}, conflict("", "this partner is archived; unarchive it to add endpoints")
	}
	return p, nil
}

func (s *Server) blankForm(c echo.Context, p db.Partner, kind string) endpointform.Form {
	f := endpointform.Form{
		PartnerID: p.ID, PartnerName: p.Name, Kind: kind, Presets: presetViews(), CSRF: principalOf(c).CSRF,
		MaxAttempts: strconv.Itoa(defaultMaxAttempts), TimeoutMs: strconv.Itoa(defaultTimeoutMs),
		MaxInFlight: strconv.Itoa(defaultMaxInFlight), FailureThreshold: strconv.Itoa(defaultFailureThreshold),
		DisableAfterFailures: strconv.Itoa(defaultDisableAfterFailures), DisableAfterHours: strconv.Itoa(defaultDisableAfterHours),
		Enabled: true, Errors: map[string]string{}, FilterRows: withBlankRows(nil),
	}
	if kind == "postback" {
		f.Method, f.MacroStyle = "GET", string(postback.StyleBraces)
		f.Rules = rulesForm(rulesInput{})
	}
	f.RetryWindow = retryWindow(defaultMaxAttempts)
	return f
}

func presetViews() []endpointform.Preset {
	var out []endpointform.Preset
	for _, p := range postback.Presets() {
		v := endpointform.Preset{ID: p.ID, Name: p.Name, Help: p.Help}
		for _, par := range p.Params {
			v.Params = append(v.Params, endpointform.Param{Name: par.Name, Macro: par.Macro, Help: par.Help})
		}
		out = append(out, v)
	}
	return out
}

// formOf reads the posted form back into the view model (exactly as typed)
// and into endpoint input, with parse errors per field.
func (s *Server) formOf(c echo.Context, base endpointform.Form) (endpointform.Form, endpointInput) {
	f := base
	f.Name, f.URL, f.Method = c.FormValue("name"), strings.TrimSpace(c.FormValue("url")), c.FormValue("method")
	f.EventTypes, f.Headers, f.SuccessBodyContains = c.FormValue("event_types"), c.FormValue("headers"), c.FormValue("success_body_contains")
	f.MaxAttempts, f.TimeoutMs, f.RatePerSec, f.Burst = c.FormValue("max_attempts"), c.FormValue("timeout_ms"), c.FormValue("rate_per_sec"), c.FormValue("burst")
	f.MaxInFlight, f.FailureThreshold = c.FormValue("max_in_flight"), c.FormValue("failure_threshold")
	f.DisableAfterFailures, f.DisableAfterHours = c.FormValue("disable_after_failures"), c.FormValue("disable_after_hours")
	f.Preset = c.FormValue("preset")
	f.MacroStyle, f.SignatureParam = c.FormValue("macro_style"), strings.TrimSpace(c.FormValue("signature_param"))
	if f.Kind == "webhook" {
		f.Method = "POST" // the form offers no choice: the signed body is the request body
	}
	if f.EndpointID != 0 {
		f.Enabled = c.FormValue("enabled") == "true"
	}
	f.SendTraceparent = c.FormValue("send_traceparent") == "true"
	f.Errors = map[string]string{}
	in := endpointInput{PartnerID: f.PartnerID, Name: f.Name, Kind: f.Kind, URL: f.URL, Method: f.Method,
		SuccessBodyContains: f.SuccessBodyContains, Enabled: &f.Enabled, SendTraceparent: &f.SendTraceparent}
	if f.Kind == "postback" {
		in.MacroStyle, in.SignatureParam, in.Preset = f.MacroStyle, f.SignatureParam, f.Preset
		f.Rules = rulesFormOf(c)
		var msg string
		if in.rulesInput, msg = rulesInputOf(f.Rules); msg != "" {
			f.Errors["value_maps"] = msg
		}
	}
	in.EventTypes = formEventTypes(f.EventTypes)
	var msg string
	if in.Headers, msg = parseHeaderLines(f.Headers); msg != "" {
		f.Errors["headers"] = msg
	}
	intField := func(field, raw string) *int {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			f.Errors[field] = "must be a whole number"
			return nil
		}
		return &n
	}
	in.MaxAttempts = intField("max_attempts", f.MaxAttempts)
	in.TimeoutMs = intField("timeout_ms", f.TimeoutMs)
	in.Burst = intField("burst", f.Burst)
	in.MaxInFlight = intField("max_in_flight", f.MaxInFlight)
	in.FailureThreshold = intField("failure_threshold", f.FailureThreshold)
	in.DisableAfterFailures = intField("disable_after_failures", f.DisableAfterFailures)
	in.DisableAfterHours = intField("disable_after_hours", f.DisableAfterHours)
	if raw := strings.TrimSpace(f.RatePerSec); raw != "" {
		r, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			f.Errors["rate_per_sec"] = "must be a number"
		} else {
			in.RatePerSec = &r
		}
	}
	if n := in.MaxAttempts; n != nil && *n >= 1 && *n <= 50 {
		f.RetryWindow = retryWindow(*n)
	}
	form := c.Request().Form
	f.FilterJSON = c.FormValue("filter_json")
	rows, raw, problem := filterFromForm(form["filter_field"], form["filter_op"], form["filter_value"], f.FilterJSON)
	f.FilterRows = withBlankRows(rows)
	if problem != "" {
		f.Errors["filter"] = problem
	}
	in.Filter = raw
	return f, in
}

// endpointCreate: POST /partners/:id/endpoints (operator). Any invalid field
// answers 422 with the form and its messages, and nothing is written. On
// success the response itself shows the signing secret, once.
func (s *Server) endpointCreate(c echo.Context) error {
	p, err := s.partnerForForm(c)
	if err != nil {
		return err
	}
	kind := c.FormValue("kind")
	if kind != "postback" {
		kind = "webhook"
	}
	f, in := s.formOf(c, s.blankForm(c, p, kind))
	cfg, errs := validateEndpoint(in, s.guard)
	if f.Preview, err = s.preview(c.Request().Context(), f); err != nil {
		return err
	}
	if previewRequested(c) {
		if _, ok := f.Errors["filter"]; !ok {
			for _, e := range errs {
				if e.Field == "filter" {
					f.Errors["filter"] = e.Message
				}
			}
		}
		return s.renderFormPreview(c, f, in)
	}
	for _, e := range errs {
		if _, ok := f.Errors[e.Field]; !ok {
			f.Errors[e.Field] = e.Message
		}
	}
	if len(f.Errors) > 0 {
		if f, err = s.withFilterPreview(c, f, in); err != nil {
			return err
		}
		return s.renderForm(c, f)
	}
	e, secret, err := s.createEndpoint(c.Request().Context(), cfg, principalOf(c).actor())
	var ae *apiError
	if errors.As(err, &ae) && ae.Field != "" {
		f.Errors[ae.Field] = ae.Message
		return s.renderForm(c, f)
	}
	if err != nil {
		return err
	}
	// The secret page replaces the form: a full page, so a reload cannot
	// show the secret again (the form would be posted again, and refused as
	// a duplicate name).
	if isHTMX(c) {
		c.Response().Header().Set("HX-Retarget", "body")
		c.Response().Header().Set("HX-Reswap", "outerHTML")
		c.Response().Header().Set("HX-Push-Url", "/endpoints/"+strconv.FormatInt(e.ID, 10))
	}
	created := endpointform.Created{EndpointID: e.ID, Name: e.Name, Partner: p.Name, Kind: e.Kind, Secret: secret, Template: e.URL,
		SignatureParam: e.SignatureParam, Warnings: f.Preview.Warnings}
	return s.render(c, http.StatusCreated, endpointform.CreatedPage(s.meta(c, "Endpoint created", layout.NavEndpoints), created))
}

// renderFormPreview answers the "check against recent events" button: the
// form as typed, with only the filter's problems shown, and its preview.
func (s *Server) renderFormPreview(c echo.Context, f endpointform.Form, in endpointInput) error {
	filterErr, bad := f.Errors["filter"]
	f.Errors = map[string]string{}
	if bad {
		f.Errors["filter"] = filterErr
	}
	f, err := s.withFilterPreview(c, f, in)
	if err != nil {
		return err
	}
	if isHTMX(c) {
		return s.render(c, http.StatusOK, endpointform.FormFragment(f))
	}
	return s.render(c, http.StatusOK, endpointform.Page(s.meta(c, "Endpoint", layout.NavEndpoints), f))
}

func (s *Server) renderForm(c echo.Context, f endpointform.Form) error {
	if isHTMX(c) {
		return s.render(c, http.StatusUnprocessableEntity, endpointform.FormFragment(f))
	}
	return s.render(c, http.StatusUnprocessableEntity, endpointform.Page(s.meta(c, "Endpoint", layout.NavEndpoints), f))
}

// endpointEditPage: GET /endpoints/:id/edit (operator)
func (s *Server) endpointEditPage(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	r, err := s.endpointWithHealth(c.Request().Context(), id)
	if err != nil {
		return err
	}
	e := r.Endpoint
	f := endpointform.Form{EndpointID: e.ID, PartnerID: e.PartnerID, PartnerName: r.PartnerName, Kind: e.Kind,
		Name: e.Name, URL: e.URL, Method: e.Method, EventTypes: strings.Join(e.EventTypes, ", "),
		SuccessBodyContains: e.SuccessBodyContains, MaxAttempts: strconv.Itoa(int(e.MaxAttempts)),
		TimeoutMs: strconv.Itoa(int(e.TimeoutMs)), MaxInFlight: strconv.Itoa(int(e.MaxInFlight)),
		FailureThreshold: strconv.Itoa(int(e.FailureThreshold)), Enabled: e.Enabled, SendTraceparent: e.SendTraceparent,
		DisableAfterFailures: strconv.Itoa(int(e.DisableAfterFailures)), DisableAfterHours: strconv.Itoa(int(e.DisableAfterHours)),
		RetryWindow: retryWindow(int(e.MaxAttempts)), CSRF: principalOf(c).CSRF, Errors: map[string]string{},
		MacroStyle: e.MacroStyle, SignatureParam: e.SignatureParam, Preset: e.Preset, Presets: presetViews(),
		Rules: rulesForm(conversionFromStored(e))}
	if e.RatePerSec != nil {
		f.RatePerSec = strconv.FormatFloat(*e.RatePerSec, 'f', -1, 64)
	}
	if e.Burst != nil {
		f.Burst = strconv.Itoa(int(*e.Burst))
	}
	// Stored values are not shown; the mask sent back keeps each one.
	f.Headers = maskedHeaderLines(e.Headers)
	rows, rawJSON := filterToForm(e.Filter)
	f.FilterRows, f.FilterJSON = withBlankRows(rows), rawJSON
	if f.Preview, err = s.preview(c.Request().Context(), f); err != nil {
		return err
	}
	if f.FilterPreview, err = s.filterPreview(c.Request().Context(), e.Filter, "", e.EventTypes); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpointform.Page(s.meta(c, "Edit "+e.Name, layout.NavEndpoints), f))
}

// endpointUpdate: POST /endpoints/:id/edit (operator)
func (s *Server) endpointUpdate(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if previewRequested(c) {
		r, err := s.endpointWithHealth(ctx, id)
		if err != nil {
			return err
		}
		f, in := s.formOf(c, endpointform.Form{EndpointID: id, PartnerID: r.Endpoint.PartnerID, PartnerName: r.PartnerName,
			Kind: r.Endpoint.Kind, CSRF: principalOf(c).CSRF, RetryWindow: retryWindow(int(r.Endpoint.MaxAttempts)), Presets: presetViews()})
		if _, bad := f.Errors["filter"]; !bad {
			if _, msg := checkFilter(in.Filter); msg != "" {
				f.Errors["filter"] = msg
			}
		}
		if f.Preview, err = s.preview(ctx, f); err != nil {
			return err
		}
		return s.renderFormPreview(c, f, in)
	}
	var f endpointform.Form
	var in endpointInput
	saved, errs, err := s.editEndpoint(ctx, id, principalOf(c).actor(), urlSetByOperator, func(cur db.Endpoint) (endpointInput, []fieldError, error) {
		p, err := s.q.PartnerGet(ctx, cur.PartnerID)
		if err != nil {
			return endpointInput{}, nil, err
		}
		f, in = s.formOf(c, endpointform.Form{EndpointID: id, PartnerID: cur.PartnerID, PartnerName: p.Name, Kind: cur.Kind, CSRF: principalOf(c).CSRF, RetryWindow: retryWindow(int(cur.MaxAttempts)), Presets: presetViews()})
		var read []fieldError
		for field, msg := range f.Errors {
			read = append(read, fieldError{field, msg})
		}
		return in, read, nil
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
		if f.Preview, err = s.preview(ctx, f); err != nil {
			return err
		}
		if f, err = s.withFilterPreview(c, f, in); err != nil {
			return err
		}
		return s.renderForm(c, f)
	}
	warnings, err := s.endpointWarnings(ctx, configForWarnings(saved))
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		// The flash travels in a cookie: the first warning, shortened; the
		// edit form lists them all beside the URL.
		first := warnings[0].Message
		if len(first) > 300 {
			first = strings.ToValidUTF8(first[:300], "") + "…"
		}
		s.addFlash(c, layout.FlashInfo, fmt.Sprintf("Endpoint saved, with %d warning(s) about its URL template (the edit form lists them): %s", len(warnings), first))
	} else {
		s.addFlash(c, layout.FlashSuccess, "Endpoint saved.")
	}
	return redirectAfterPost(c, "/endpoints/"+strconv.FormatInt(id, 10))
}

// Filter builder (the endpoint form's payload filter).

// filterOpKeys maps the builder's operator names to the language's.
var filterOpKeys = map[string]string{
	"eq": "$eq", "ne": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte",
	"in": "$in", "nin": "$nin", "exists": "$exists", "not_exists": "$exists",
}

// blankFilterRows is how many empty rows the builder offers below the
// filled ones: without JavaScript there is no "add row" button.
const blankFilterRows = 2

// maxFilterPreviewEvents is how many recent events the preview checks, of
// the newest filterPreviewScan events.
const (
	maxFilterPreviewEvents = 20
	filterPreviewScan      = 10000
)
