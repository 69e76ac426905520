// Package endpointform renders the endpoint form (create and edit): webhook
// or postback, tracker presets with help for every macro, a live preview of
// the postback URL, delivery settings with the worst-case retry window,
// field-level errors, the test fire, and the page that shows a new
// endpoint's signing secret once.
package endpointform

import (
	"strconv"

	"github.com/hookline/hookline/views/components"
)

// Fragment ids.
const (
	FormID        = "endpoint-form"
	PreviewID     = "postback-preview"
	RetryWindowID = "retry-window"
	TestResultID  = "form-test-result"
	// FilterPreviewID is the list of recent events the filter would pass.
	FilterPreviewID = "filter-preview"
	FilterBuilderID = "filter-builder"
)

// Form is the form's view model. Numbers stay strings so that what the user
// typed is shown back with its error.
type Form struct {
	EndpointID  int64 // 0 when creating
	PartnerID   int64
	PartnerName string
	Kind        string // webhook | postback
	Preset      string
	Presets     []Preset

	Name, URL, Method, EventTypes, Headers, SuccessBodyContains string
	MaxAttempts, TimeoutMs, RatePerSec, Burst, MaxInFlight      string
	FailureThreshold                                            string
	Enabled                                                     bool
	// SendTraceparent: attempts carry a traceparent header while traces
	// are on.
	SendTraceparent bool
	// The failure budget: auto-disable after this many failed deliveries
	// spanning at least this many hours.
	DisableAfterFailures, DisableAfterHours string

	// Postbacks: the macro style ("braces" or "hash") and the query
	// parameter that carries the URL's signature ("" = unsigned).
	MacroStyle, SignatureParam string
	// Rules are a postback's value maps and payout share.
	Rules Rules

	// FilterRows are the builder's field / operator / value rows (blank
	// rows included, so the form works without JavaScript); FilterJSON is
	// the part of the filter rows cannot express ($or, $not...), combined
	// with the rows by AND.
	FilterRows    []FilterRow
	FilterJSON    string
	FilterPreview FilterPreview

	RetryWindow string
	Preview     Preview
	Errors      map[string]string
	CSRF        string
}

// Preset is a tracker preset and the meaning of each of its parameters.
type Preset struct {
	ID, Name, Help string
	Params         []Param
}

// Param is one tracker parameter.
type Param struct{ Name, Macro, Help string }

// Preview is the postback URL a sample conversion would produce, and what
// the save-time lint warns about (shown under the URL field; saving is
// never blocked by a warning).
type Preview struct {
	Segments []Segment
	Error    string
	Empty    bool
	Warnings []Warning
}

// Warning is one save-time lint warning about the URL template.
type Warning struct{ Code, Message string }

// MacroStyles are the postback macro styles the form offers.
var MacroStyles = []components.Option{
	{Value: "braces", Label: "{click_id} — Voluum, Binom, Keitaro, Everflow, Affise"},
	{Value: "hash", Label: "#click_id# — CAKE"},
}

// Segment is literal text or a macro's encoded value.
type Segment struct {
	Text    string
	Macro   string
	Known   bool
	Missing bool
	// Problem says why the endpoint's rules cannot send the value.
	Problem string
}

// FilterRow is one builder condition, as typed.
type FilterRow struct{ Field, Op, Value string }

// FilterOps are the builder's operators (the form's names for them).
var FilterOps = []components.Option{
	{Value: "eq", Label: "is"}, {Value: "ne", Label: "is not"},
	{Value: "gt", Label: ">"}, {Value: "gte", Label: "≥"}, {Value: "lt", Label: "<"}, {Value: "lte", Label: "≤"},
	{Value: "in", Label: "is one of"}, {Value: "nin", Label: "is none of"},
	{Value: "exists", Label: "exists"}, {Value: "not_exists", Label: "does not exist"},
}

// FilterPreview is which recent events of the endpoint's types the filter
// would deliver.
type FilterPreview struct {
	Error    string // the filter does not compile
	NoFilter bool   // every event is delivered
	Events   []PreviewEvent
	Matched  int
}

// PreviewEvent is one recent event and whether the filter passes it.
type PreviewEvent struct {
	ID, Type, At, Excerpt string
	Match                 bool
}

// Created is the page after creating an endpoint: the secret, once.
type Created struct {
	EndpointID int64
	Name       string
	Partner    string
	Kind       string
	Secret     string
	Template   string
	// SignatureParam is set for a signed postback: the page explains the
	// signature instead of the webhook headers.
	SignatureParam string
	Warnings       []Warning
}

func (f Form) action() string {
	if f.EndpointID != 0 {
		return "/endpoints/" + strconv.FormatInt(f.EndpointID, 10) + "/edit"
	}
	return "/partners/" + strconv.FormatInt(f.PartnerID, 10) + "/endpoints"
}

func (f Form) newURL(kind, preset string) string {
	u := "/partners/" + strconv.FormatInt(f.PartnerID, 10) + "/endpoints/new?kind=" + kind
	if preset != "" {
		u += "&preset=" + preset
	}
	return u
}

func (f Form) selectedPreset() *Preset {
	for i := range f.Presets {
		if f.Presets[i].ID == f.Preset {
			return &f.Presets[i]
		}
	}
	return nil
}

func (f Form) field(id, name, label, typ, value, help string, required bool) components.FieldData {
	return components.FieldData{ID: id, Name: name, Label: label, Type: typ, Value: value, Help: help, Required: required, Error: f.Errors[name]}
}

func segmentClass(s Segment) string {
	switch {
	case s.Macro == "":
		return "lit"
	case s.Missing && !s.Known:
		return "macro macro-unknown"
	case s.Missing:
		return "macro macro-missing"
	}
	return "macro"
}

func segmentTitle(s Segment) string {
	switch {
	case s.Macro == "":
		return ""
	case s.Problem != "":
		return "{" + s.Macro + "}: " + s.Problem
	case s.Missing && !s.Known:
		return "{" + s.Macro + "}: not a built-in and not in the sample conversion; check the spelling, or make sure your events carry this field"
	case s.Missing:
		return "{" + s.Macro + "}: present but not a plain value (null, object or array)"
	}
	return "{" + s.Macro + "}"
}

func errorList(m map[string]string) []string {
	order := []string{"name", "kind", "url", "method", "event_types", "headers", "success_body_contains",
		"macro_style", "signature_param", "preset", "value_maps", "unmapped", "payout_share", "payout_field", "fire_on", "conversion_key", "conversion_status", "conversion_days", "body_template", "body_format", "body_signature", "filter", "max_attempts", "timeout_ms", "rate_per_sec", "burst", "max_in_flight", "failure_threshold",
		"disable_after_failures", "disable_after_hours", "partner_id"}
	var out []string
	for _, k := range order {
		if v, ok := m[k]; ok {
			out = append(out, labels[k]+": "+v)
		}
	}
	return out
}

var labels = map[string]string{
	"name": "Name", "kind": "Kind", "url": "URL", "method": "Method", "event_types": "Event types",
	"headers": "Custom headers", "success_body_contains": "Success body", "max_attempts": "Max attempts",
	"timeout_ms": "Timeout", "rate_per_sec": "Rate limit", "burst": "Burst", "max_in_flight": "In flight",
	"failure_threshold": "Breaker threshold", "partner_id": "Partner", "filter": "Payload filter",
	"macro_style": "Macro style", "signature_param": "Signature parameter", "preset": "Preset",
	"disable_after_failures": "Disable after failures", "disable_after_hours": "Disable after hours",
	"value_maps": "Value maps", "unmapped": "Unmapped values", "payout_share": "Payout share", "payout_field": "Payout field", "fire_on": "Send a postback for", "conversion_key": "Conversion key", "conversion_status": "Status field", "conversion_days": "Keep state (days)",
	"body_template": "Body template", "body_format": "Body format", "body_signature": "Body signature",
}

func filterRowID(i int, part string) string { return "filter-" + part + "-" + strconv.Itoa(i) }
