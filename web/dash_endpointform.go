package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/worker/filter"
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
			f.MacroStyle = string(pr.MacroStyle())
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
	f.Errors = map[string]string{}
	in := endpointInput{PartnerID: f.PartnerID, Name: f.Name, Kind: f.Kind, URL: f.URL, Method: f.Method,
		SuccessBodyContains: f.SuccessBodyContains, Enabled: &f.Enabled}
	if f.Kind == "postback" {
		in.MacroStyle, in.SignatureParam, in.Preset = f.MacroStyle, f.SignatureParam, f.Preset
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

// parseHeaderLines reads the form's custom headers, one "Name: value" a
// line (blank lines skipped), and what is wrong with them, if anything.
func parseHeaderLines(text string) (map[string]string, string) {
	headers := map[string]string{}
	msg := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			msg = fmt.Sprintf("line %d is not \"Name: value\"", i+1)
			continue
		}
		headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return headers, msg
}

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
		FailureThreshold: strconv.Itoa(int(e.FailureThreshold)), Enabled: e.Enabled,
		DisableAfterFailures: strconv.Itoa(int(e.DisableAfterFailures)), DisableAfterHours: strconv.Itoa(int(e.DisableAfterHours)),
		RetryWindow: retryWindow(int(e.MaxAttempts)), CSRF: principalOf(c).CSRF, Errors: map[string]string{},
		MacroStyle: e.MacroStyle, SignatureParam: e.SignatureParam, Preset: e.Preset, Presets: presetViews()}
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
	saved, errs, err := s.editEndpoint(ctx, id, principalOf(c).actor(), func(cur db.Endpoint) (endpointInput, []fieldError, error) {
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

// formEventTypes splits the form's event types (commas, spaces or lines).
func formEventTypes(raw string) []string {
	return strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\t' || r == '\r' })
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

func sortedErrors(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
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

// maxFilterPreviewEvents is how many recent events the preview checks, of
// the newest filterPreviewScan events.
const (
	maxFilterPreviewEvents = 20
	filterPreviewScan      = 10000
)

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
