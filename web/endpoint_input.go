package web

// Long file: an endpoint's input, its stored form and validateEndpoint, which checks every field in one pass so the form shows all problems at once.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/budget"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/request"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

// Endpoint configuration defaults and limits (DESIGN §2).
const (
	defaultMaxAttempts      = 5
	defaultTimeoutMs        = 15000
	defaultMaxInFlight      = 8
	defaultFailureThreshold = 10
	// The failure budget (auto-disable): 10 failed deliveries in a row
	// spanning at least 72 h.
	defaultDisableAfterFailures = 10
	defaultDisableAfterHours    = 72
	maxHeaders                  = 32

	// Ranges of the numeric settings (documented in web/API.md and in
	// openapi.json; the database checks the same bounds,
	// except the rate's floor: a rate of 1e-300 per second is a valid
	// double that never sends).
	maxMaxAttempts      = 50
	minTimeoutMs        = 100
	maxTimeoutMs        = 120000
	maxMaxInFlight      = 1000
	maxFailureThreshold = 1000
	minRatePerSec       = 0.01 // one request every 100 s
	maxRatePerSec       = 100000
	maxBurst            = 100000
	// maxURLLength is the database's limit on an endpoint's url (characters).
	maxURLLength = 4096
	// maskedValue stands for a stored custom header value: responses and
	// the edit form show it instead of the value, and sending it back keeps
	// the value.
	maskedValue = "********"
)

// endpointInput is an endpoint's configuration as the API and the dashboard
// form accept it. Pointers distinguish "not given" (use the default) from a
// value; a JSON null rate_per_sec means unlimited.
type endpointInput struct {
	PartnerID           int64             `json:"partner_id"`
	Name                string            `json:"name"`
	Kind                string            `json:"kind"`
	URL                 string            `json:"url"`
	Method              string            `json:"method"`
	EventTypes          []string          `json:"event_types"`
	Headers             map[string]string `json:"headers"`
	MaxAttempts         *int              `json:"max_attempts"`
	TimeoutMs           *int              `json:"timeout_ms"`
	RatePerSec          *float64          `json:"rate_per_sec"`
	Burst               *int              `json:"burst"`
	MaxInFlight         *int              `json:"max_in_flight"`
	FailureThreshold    *int              `json:"failure_threshold"`
	SuccessBodyContains string            `json:"success_body_contains"`
	Enabled             *bool             `json:"enabled"`
	// Filter is a worker/filter document; absent or null means no filter.
	Filter json.RawMessage `json:"filter"`
	// Postbacks: how the template writes macros ("braces", the default, or
	// "hash"; a preset's style when empty), the query parameter that
	// carries the URL's signature ("" sends unsigned postbacks), and the
	// tracker preset the template came from ("" for none).
	MacroStyle     string `json:"macro_style"`
	SignatureParam string `json:"signature_param"`
	Preset         string `json:"preset"`
	// The failure budget: disabled after this many consecutive failed
	// deliveries spanning at least this many hours (0 failures: never).
	DisableAfterFailures *int `json:"disable_after_failures"`
	DisableAfterHours    *int `json:"disable_after_hours"`
	// Egress is the endpoint's proxy, CAs, client certificate and receiver
	// credentials (api_endpoint_egress.go); nil leaves them as they are.
	Egress     *egressInput `json:"egress"`
	rulesInput              // postbacks: value maps and payout share
	// SendTraceparent: each attempt carries a traceparent header naming
	// its span (endpoint_tracing.go); nil keeps the stored setting (off
	// for a new endpoint).
	SendTraceparent *bool `json:"send_traceparent"`
}

// endpointConfig is a validated endpointInput with defaults applied.
type endpointConfig struct {
	PartnerID           int64
	Name                string
	Kind                string
	URL                 string
	Method              string
	EventTypes          []string
	Headers             map[string]string
	MaxAttempts         int32
	TimeoutMs           int32
	RatePerSec          *float64
	Burst               *int32
	MaxInFlight         int32
	FailureThreshold    int32
	SuccessBodyContains string
	Enabled             bool
	Filter              []byte // compact filter JSON; nil means none
	MacroStyle          postback.Style
	SignatureParam      string
	Preset              string
	// DisableAfterFailures and DisableAfterHours are the failure budget.
	DisableAfterFailures int32
	DisableAfterHours    int32
	// URLSetBy is who set the URL (urlSetByPartner from the portal); ""
	// is the operator.
	URLSetBy string
	Rules    []byte     // a postback's rules as stored; nil for none
	Body     bodyConfig // a POST postback's body
	// SendTraceparent: nil keeps the stored setting.
	SendTraceparent *bool
}

// fieldError is one validation problem, shown next to its field.
type fieldError struct {
	Field   string
	Message string
}

// inputFromEndpoint turns a stored endpoint back into input, the base a
// PATCH or an edit form is applied to. Header values come back masked.
func inputFromEndpoint(e db.Endpoint) endpointInput {
	in := endpointInput{
		PartnerID:           e.PartnerID,
		Name:                e.Name,
		Kind:                e.Kind,
		URL:                 e.URL,
		Method:              e.Method,
		EventTypes:          e.EventTypes,
		SuccessBodyContains: e.SuccessBodyContains,
		RatePerSec:          e.RatePerSec,
		Filter:              e.Filter,
		MacroStyle:          e.MacroStyle,
		SignatureParam:      e.SignatureParam,
		Preset:              e.Preset,
		rulesInput:          conversionFromStored(e),
	}
	in.Headers = maskedHeaders(e.Headers)
	ptr := func(v int32) *int { n := int(v); return &n }
	in.MaxAttempts, in.TimeoutMs = ptr(e.MaxAttempts), ptr(e.TimeoutMs)
	in.MaxInFlight, in.FailureThreshold = ptr(e.MaxInFlight), ptr(e.FailureThreshold)
	in.DisableAfterFailures, in.DisableAfterHours = ptr(e.DisableAfterFailures), ptr(e.DisableAfterHours)
	if e.Burst != nil {
		in.Burst = ptr(*e.Burst)
	}
	enabled, traceparent := e.Enabled, e.SendTraceparent
	in.Enabled, in.SendTraceparent = &enabled, &traceparent
	return in
}

// validateEndpoint checks every field and returns the normalised
// configuration, or every problem found (the form shows them all; the API
// reports the first).
func validateEndpoint(in endpointInput, guard *ssrf.Guard) (endpointConfig, []fieldError) {
	var errs []fieldError
	fail := func(field, format string, args ...any) {
		errs = append(errs, fieldError{field, fmt.Sprintf(format, args...)})
	}
	c := endpointConfig{
		PartnerID:           in.PartnerID,
		Name:                strings.TrimSpace(in.Name),
		Kind:                strings.TrimSpace(in.Kind),
		URL:                 strings.TrimSpace(in.URL),
		Method:              strings.ToUpper(strings.TrimSpace(in.Method)),
		SuccessBodyContains: in.SuccessBodyContains,
		Enabled:             in.Enabled == nil || *in.Enabled,
		SendTraceparent:     in.SendTraceparent,
	}
	if c.PartnerID <= 0 {
		fail("partner_id", "is required")
	}
	switch {
	case c.Name == "":
		fail("name", "is required")
	case utf8.RuneCountInString(c.Name) > 200:
		fail("name", "must be at most 200 characters")
	}

	switch c.Kind {
	case "webhook":
		if c.Method == "" {
			c.Method = "POST"
		}
		if c.Method != "POST" {
			fail("method", "must be POST for webhooks (the signed JSON body is the request body)")
		}
		if msg := checkWebhookURL(c.URL, guard); msg != "" {
			fail("url", "%s", msg)
		}
		c.MacroStyle = postback.StyleBraces
		switch {
		case in.MacroStyle != "" && in.MacroStyle != string(postback.StyleBraces):
			fail("macro_style", "is for postback templates; a webhook URL has no macros")
		case in.SignatureParam != "":
			fail("signature_param", "is for postbacks; webhooks are signed with Standard Webhooks headers")
		case in.Preset != "":
			fail("preset", "is for postbacks")
		case in.rulesInput.given():
			fail("value_maps", "value_maps, unmapped, payout_share, payout_field, the body_ fields and the conversion fields (fire_on, conversion_key, conversion_status, conversion_days) are for postbacks; a webhook's body is the event payload")
		}
	case "postback":
		if c.Method == "" {
			c.Method = "GET"
		}
		if c.Method != "GET" && c.Method != "POST" {
			fail("method", "must be GET or POST")
		}
		if field, msg := c.checkPostback(in); msg != "" {
			fail(field, "%s", msg)
		}
		if msg := checkPostbackTemplate(c.URL, c.MacroStyle, guard); msg != "" {
			fail("url", "%s", msg)
		} else if msg := checkSignatureParam(c.URL, c.MacroStyle, c.SignatureParam); msg != "" {
			fail("signature_param", "%s", msg)
		}
		var fe *fieldError
		if c.Rules, fe = checkRules(in.rulesInput); fe != nil {
			errs = append(errs, *fe)
		}
		if c.Body, fe = checkBody(in.rulesInput, c.Method, c.MacroStyle); fe != nil {
			errs = append(errs, *fe)
		}
	case "":
		fail("kind", "is required: webhook or postback")
	default:
		fail("kind", "must be webhook or postback")
	}

	seen := map[string]bool{}
	for _, t := range in.EventTypes {
		t = strings.TrimSpace(t)
		if t == "*" || t == "" {
			continue // "*" and blanks mean "every type", the same as an empty list
		}
		base := strings.TrimSuffix(t, "*")
		if !eventTypeName.MatchString(strings.TrimSuffix(base, ".")) || (strings.HasSuffix(t, "*") && !strings.HasSuffix(base, ".")) {
			fail("event_types", "%q is not a valid event type or pattern (letters, digits, _ . : -; a trailing \".*\" matches a prefix)", t)
			continue
		}
		if !seen[t] {
			seen[t] = true
			c.EventTypes = append(c.EventTypes, t)
		}
	}
	if c.EventTypes == nil {
		c.EventTypes = []string{}
	}

	c.Headers = map[string]string{}
	if len(in.Headers) > maxHeaders {
		fail("headers", "at most %d custom headers", maxHeaders)
	}
	names := make([]string, 0, len(in.Headers))
	for name := range in.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value := in.Headers[name]
		switch {
		case !signing.ValidHeaderName(name):
			fail("headers", "%q is not a valid header name", name)
		case signing.Reserved(name):
			fail("headers", "%q is set by hookline and cannot be overridden", name)
		case value == maskedValue:
			fail("headers", "%q: %s keeps a stored value, and there is none; enter the value", name, maskedValue)
		case len(value) > 2048:
			fail("headers", "the value of %q is longer than 2048 bytes", name)
		case strings.IndexFunc(value, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) >= 0:
			fail("headers", "the value of %q contains control characters", name)
		default:
			c.Headers[name] = value
		}
	}

	intField := func(field string, v *int, def, min, max int) int32 {
		if v == nil {
			return int32(def)
		}
		if *v < min || *v > max {
			fail(field, "must be between %d and %d", min, max)
			return int32(def)
		}
		return int32(*v)
	}
	c.MaxAttempts = intField("max_attempts", in.MaxAttempts, defaultMaxAttempts, 1, maxMaxAttempts)
	c.TimeoutMs = intField("timeout_ms", in.TimeoutMs, defaultTimeoutMs, minTimeoutMs, maxTimeoutMs)
	c.MaxInFlight = intField("max_in_flight", in.MaxInFlight, defaultMaxInFlight, 1, maxMaxInFlight)
	c.FailureThreshold = intField("failure_threshold", in.FailureThreshold, defaultFailureThreshold, 1, maxFailureThreshold)
	c.DisableAfterFailures = intField("disable_after_failures", in.DisableAfterFailures, defaultDisableAfterFailures, 0, budget.MaxFailures)
	c.DisableAfterHours = intField("disable_after_hours", in.DisableAfterHours, defaultDisableAfterHours, 0, budget.MaxHours)

	switch {
	case in.RatePerSec == nil:
		if in.Burst != nil {
			fail("burst", "needs rate_per_sec (a burst without a rate limit means nothing)")
		}
	case math.IsNaN(*in.RatePerSec) || *in.RatePerSec < minRatePerSec || *in.RatePerSec > maxRatePerSec:
		fail("rate_per_sec", "must be between %g and %g requests per second (omit it for no limit)", minRatePerSec, float64(maxRatePerSec))
	default:
		rate := *in.RatePerSec
		c.RatePerSec = &rate
		burst := int32(math.Max(1, math.Ceil(rate)))
		if in.Burst != nil {
			burst = intField("burst", in.Burst, int(burst), 1, maxBurst)
		}
		c.Burst = &burst
	}

	if f, msg := checkFilter(in.Filter); msg != "" {
		fail("filter", "%s", msg)
	} else {
		c.Filter = f
	}

	if utf8.RuneCountInString(c.SuccessBodyContains) > 200 {
		fail("success_body_contains", "must be at most 200 characters")
	}
	// Text PostgreSQL would refuse (NUL, bytes that are not UTF-8), in
	// whatever field it came: the API's decoder and the dashboard's form
	// check catch it earlier; this keeps every caller safe.
	type text struct{ field, value string }
	texts := []text{{"name", c.Name}, {"kind", c.Kind}, {"url", c.URL},
		{"method", c.Method}, {"success_body_contains", c.SuccessBodyContains},
		{"macro_style", in.MacroStyle}, {"signature_param", in.SignatureParam}, {"preset", in.Preset}}
	for _, t := range in.EventTypes {
		texts = append(texts, text{"event_types", t})
	}
	for name, value := range in.Headers {
		texts = append(texts, text{"headers", name}, text{"headers", value})
	}
	for _, t := range texts {
		if msg := textProblem(t.value); msg != "" {
			errs = append([]fieldError{{t.field, msg}}, errs...)
			break
		}
	}
	return c, errs
}

// signatureParamPattern is a query parameter name safe to append without
// encoding (the database checks the same).
var signatureParamPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// checkPostback reads a postback's preset, macro style and signature
// parameter into c (a preset sets the style unless one is given), or says
// which field is wrong.
func (c *endpointConfig) checkPostback(in endpointInput) (field, msg string) {
	c.Preset = strings.TrimSpace(in.Preset)
	c.SignatureParam = strings.TrimSpace(in.SignatureParam)
	c.MacroStyle = postback.Style(strings.TrimSpace(in.MacroStyle))
	if c.Preset != "" {
		p, ok := postback.PresetByID(c.Preset)
		if !ok {
			return "preset", fmt.Sprintf("%q is not a preset; leave it empty or use one of %s", c.Preset, presetIDs())
		}
		if c.MacroStyle == "" {
			c.MacroStyle = p.MacroStyle()
		}
	}
	if c.MacroStyle == "" {
		c.MacroStyle = postback.StyleBraces
	}
	if !c.MacroStyle.Valid() {
		c.MacroStyle = postback.StyleBraces // so the template is still checked
		return "macro_style", `must be "braces" ({click_id}) or "hash" (#click_id#)`
	}
	if c.SignatureParam != "" && !signatureParamPattern.MatchString(c.SignatureParam) {
		return "signature_param", "must be a query parameter name: a letter or _, then letters, digits, _ . or -, at most 64 characters"
	}
	return "", ""
}

func presetIDs() string {
	var ids []string
	for _, p := range postback.Presets() {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ", ")
}

// checkSignatureParam refuses a signature that a receiver could not check
// unambiguously: a parameter (or ts) the template already writes, and user
// info or a fragment, which never reach the receiver's request line.
func checkSignatureParam(tmpl string, style postback.Style, param string) string {
	if param == "" {
		return ""
	}
	t, err := postback.ParseStyle(tmpl, style)
	if err != nil {
		return "" // the url's own error is reported
	}
	if param == request.TimestampParam {
		return `"ts" carries the signed postback's time; choose another name, such as sig`
	}
	q := t.QueryParams()
	for _, name := range []string{param, request.TimestampParam} {
		if _, ok := q[name]; ok {
			return fmt.Sprintf("the URL template already has a %q parameter, which a signed postback adds itself; remove it from the template", name)
		}
	}
	authority := tmpl
	if i := strings.Index(authority, "://"); i >= 0 {
		authority = authority[i+3:]
	}
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if strings.Contains(authority, "@") || (style == postback.StyleBraces && strings.Contains(tmpl, "#")) {
		return "a signed URL cannot carry user info or a #fragment, which never reach the receiver; remove them from the template"
	}
	return ""
}

// checkFilter compiles a payload filter and returns it compacted (nil for
// none: absent, null or {}, which passes every event), or what is wrong
// with it and where.
func checkFilter(raw json.RawMessage) ([]byte, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, ""
	}
	f, err := filter.Compile(raw)
	if err != nil {
		return nil, err.Error()
	}
	if bytes.Equal(f.JSON(), []byte("{}")) {
		return nil, ""
	}
	return f.JSON(), ""
}
