package web

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/secretbox"
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
			if f.Name == "" {
				f.Name = pr.ID
			}
		} else {
			f.Preset = ""
		}
	}
	f.Preview = s.preview(f.URL)
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
		Enabled: true, Errors: map[string]string{},
	}
	if kind == "postback" {
		f.Method = "GET"
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
	f.Preset = c.FormValue("preset")
	if f.Kind == "webhook" {
		f.Method = "POST" // the form offers no choice: the signed body is the request body
	}
	if f.EndpointID != 0 {
		f.Enabled = c.FormValue("enabled") == "true"
	}
	f.Errors = map[string]string{}
	in := endpointInput{PartnerID: f.PartnerID, Name: f.Name, Kind: f.Kind, URL: f.URL, Method: f.Method,
		SuccessBodyContains: f.SuccessBodyContains, Enabled: &f.Enabled}
	for _, t := range strings.FieldsFunc(f.EventTypes, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\t' || r == '\r' }) {
		in.EventTypes = append(in.EventTypes, t)
	}
	in.Headers = map[string]string{}
	for i, line := range strings.Split(f.Headers, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			f.Errors["headers"] = fmt.Sprintf("line %d is not \"Name: value\"", i+1)
			continue
		}
		in.Headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
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
	for _, e := range errs {
		if _, ok := f.Errors[e.Field]; !ok {
			f.Errors[e.Field] = e.Message
		}
	}
	f.Preview = s.preview(f.URL)
	if len(f.Errors) > 0 {
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
	created := endpointform.Created{EndpointID: e.ID, Name: e.Name, Partner: p.Name, Kind: e.Kind, Secret: secret, Template: e.URL}
	return s.render(c, http.StatusCreated, endpointform.CreatedPage(s.meta(c, "Endpoint created", layout.NavEndpoints), created))
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
		FailureThreshold: strconv.Itoa(int(e.FailureThreshold)), Enabled: e.Enabled,
		RetryWindow: retryWindow(int(e.MaxAttempts)), CSRF: principalOf(c).CSRF, Errors: map[string]string{}}
	if e.RatePerSec != nil {
		f.RatePerSec = strconv.FormatFloat(*e.RatePerSec, 'f', -1, 64)
	}
	if e.Burst != nil {
		f.Burst = strconv.Itoa(int(*e.Burst))
	}
	// Stored values are not shown; the mask sent back keeps each one.
	names, _ := secretbox.HeaderNames(e.Headers)
	sort.Strings(names)
	for _, k := range names {
		f.Headers += k + ": " + maskedValue + "\n"
	}
	f.Preview = s.preview(f.URL)
	return s.render(c, http.StatusOK, endpointform.Page(s.meta(c, "Edit "+e.Name, layout.NavEndpoints), f))
}

// endpointUpdate: POST /endpoints/:id/edit (operator)
func (s *Server) endpointUpdate(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var f endpointform.Form
	_, errs, err := s.editEndpoint(ctx, id, principalOf(c).actor(), func(cur db.Endpoint) (endpointInput, []fieldError, error) {
		p, err := s.q.PartnerGet(ctx, cur.PartnerID)
		if err != nil {
			return endpointInput{}, nil, err
		}
		var in endpointInput
		f, in = s.formOf(c, endpointform.Form{EndpointID: id, PartnerID: cur.PartnerID, PartnerName: p.Name, Kind: cur.Kind, CSRF: principalOf(c).CSRF, RetryWindow: retryWindow(int(cur.MaxAttempts))})
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
		f.Preview = s.preview(f.URL)
		return s.renderForm(c, f)
	}
	s.addFlash(c, layout.FlashSuccess, "Endpoint saved.")
	return redirectAfterPost(c, "/endpoints/"+strconv.FormatInt(id, 10))
}

// endpointPreview: POST /endpoints/preview (htmx, as the template is typed)
func (s *Server) endpointPreview(c echo.Context) error {
	return s.render(c, http.StatusOK, endpointform.PreviewFragment(s.preview(strings.TrimSpace(c.FormValue("url")))))
}

// preview renders a template with a sample conversion, marking macros the
// sample cannot fill.
func (s *Server) preview(tmpl string) endpointform.Preview {
	if tmpl == "" {
		return endpointform.Preview{Empty: true}
	}
	t, err := postback.Parse(tmpl)
	if err != nil {
		return endpointform.Preview{Error: err.Error()}
	}
	id, _ := uuid.NewV7()
	var p endpointform.Preview
	for _, seg := range t.Preview(postback.SampleValues(id.String(), s.now())) {
		p.Segments = append(p.Segments, endpointform.Segment{Text: seg.Text, Macro: seg.Macro, Known: seg.Known, Missing: seg.Missing})
	}
	return p
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
	// From an edit form, masked header values stand for the stored ones.
	if id, ok := parseID(c.FormValue("endpoint_id")); ok {
		cur, err := s.q.EndpointGet(c.Request().Context(), id)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
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
		if e.Field == "partner_id" || e.Field == "name" {
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

func sortedErrors(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
}
