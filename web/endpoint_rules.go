package web

// A postback's conversion rules as the API and the form take them: value
// maps, what an unmapped value does, and the payout share.

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/request"
)

// valueMapsInput is value_maps as given. Decoding replaces it whole, so a
// PATCH that names value_maps sets every map (null removes them all), like
// the filter, rather than merging field by field.
type valueMapsInput map[string]map[string]string

func (m *valueMapsInput) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*m = nil
		return nil
	}
	var fresh map[string]map[string]string
	if err := json.Unmarshal(b, &fresh); err != nil {
		// A type error becomes one about the whole field: the decoder
		// names it value_maps, and the answer is a 422 "must be an object"
		// (of objects of strings).
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return &json.UnmarshalTypeError{Value: typ.Value, Type: reflect.TypeFor[map[string]map[string]string]()}
		}
		return errors.New(`value_maps must be an object of objects of strings, like {"status": {"approved": "sale"}}`)
	}
	*m = fresh
	return nil
}

// rulesInput are the rule fields of endpointInput.
type rulesInput struct {
	ValueMaps valueMapsInput `json:"value_maps"`
	Unmapped  string         `json:"unmapped"`
	// PayoutShare is a percent with at most two decimals, as a number or a
	// string (70, "62.5"); null or absent for none.
	PayoutShare json.RawMessage `json:"payout_share"`
	PayoutField string          `json:"payout_field"`
	// A POST postback's body: the template, its format (form or json;
	// guessed from the template when empty) and "webhook" to sign it with
	// Standard Webhooks headers.
	BodyTemplate  string `json:"body_template"`
	BodyFormat    string `json:"body_format"`
	BodySignature string `json:"body_signature"`
	// Conversions with state: the key field(s) (a string or an array of
	// strings), the status field, fire_on ("every" or "change") and how
	// many days the state is kept (0 or absent: the default).
	ConversionKey    conversionKeyInput `json:"conversion_key"`
	ConversionStatus string             `json:"conversion_status"`
	FireOn           string             `json:"fire_on"`
	ConversionDays   int                `json:"conversion_days"`
}

// conversionKeyInput is conversion_key as given: one field name, or an
// array of them (click_id + goal); null or "" for none.
type conversionKeyInput []string

func (k *conversionKeyInput) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*k = nil
		if one = strings.TrimSpace(one); one != "" {
			*k = []string{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New(`conversion_key must be a field name or an array of them, like "transaction_id" or ["click_id", "goal"]`)
	}
	*k = nil
	for _, f := range many {
		if f = strings.TrimSpace(f); f != "" {
			*k = append(*k, f)
		}
	}
	return nil
}

// bodyConfig is a validated POST postback body; all "" for none.
type bodyConfig struct{ Template, Format, Signature string }

// conversionFromStored is the rule and body input a stored endpoint came
// from.
func conversionFromStored(e db.Endpoint) rulesInput {
	in := rulesFromStored(e.PostbackRules)
	in.BodyTemplate, in.BodyFormat, in.BodySignature = e.BodyTemplate, e.BodyFormat, e.BodySignature
	return in
}

// checkBody validates a postback's body fields for method and style. A body
// needs POST; the template rendered with sample values must be a valid body
// of its format (invalid JSON is an error at save, not at send).
func checkBody(in rulesInput, method string, style postback.Style) (bodyConfig, *fieldError) {
	b := bodyConfig{Template: in.BodyTemplate, Format: strings.TrimSpace(in.BodyFormat), Signature: strings.TrimSpace(in.BodySignature)}
	if strings.TrimSpace(b.Template) == "" {
		if b.Signature != "" {
			return bodyConfig{}, &fieldError{"body_signature", "needs body_template: only a POST postback's body is signed this way"}
		}
		return bodyConfig{}, nil
	}
	if method != "POST" {
		return b, &fieldError{"method", "must be POST for a postback with a body_template"}
	}
	if b.Format == "" {
		b.Format = postback.BodyForm
		if t := strings.TrimSpace(b.Template); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			b.Format = postback.BodyJSON
		}
	}
	if b.Format != postback.BodyForm && b.Format != postback.BodyJSON {
		return b, &fieldError{"body_format", `must be "form" or "json"`}
	}
	if b.Signature != "" && b.Signature != request.BodySignatureWebhook {
		return b, &fieldError{"body_signature", `must be "" (unsigned) or "webhook" (Standard Webhooks headers over the body)`}
	}
	if msg := textProblem(b.Template); msg != "" {
		return b, &fieldError{"body_template", msg}
	}
	if _, err := postback.ParseBody(b.Template, b.Format, style); err != nil {
		return b, &fieldError{"body_template", err.Error()}
	}
	return b, nil
}

// rulesFromStored is the input that stored rules came from.
func rulesFromStored(stored []byte) rulesInput {
	r, err := postback.ParseRules(stored)
	if err != nil || r == nil {
		return rulesInput{}
	}
	in := rulesInput{ValueMaps: r.ValueMaps, Unmapped: r.Unmapped, PayoutField: r.PayoutField,
		ConversionKey: r.ConversionKey, ConversionStatus: r.ConversionStatus, FireOn: r.FireOn, ConversionDays: r.ConversionDays}
	if r.PayoutShareBP > 0 {
		in.PayoutShare = json.RawMessage(postback.FormatPercent(r.PayoutShareBP))
	}
	return in
}

// given reports whether any rule field is set.
func (in rulesInput) given() bool {
	share := strings.TrimSpace(string(in.PayoutShare))
	return len(in.ValueMaps) > 0 || in.BodyTemplate != "" || in.BodySignature != "" || strings.TrimSpace(in.Unmapped) != "" || (share != "" && share != "null") ||
		strings.TrimSpace(in.PayoutField) != "" || len(in.ConversionKey) > 0 || strings.TrimSpace(in.ConversionStatus) != "" ||
		strings.TrimSpace(in.FireOn) != "" || in.ConversionDays != 0
}

// checkRules validates the rule fields of a postback and returns them as
// stored: compact JSON, or nil when they change nothing (so an endpoint
// that does not use them stores, and sends, exactly as before).
func checkRules(in rulesInput) ([]byte, *fieldError) {
	r := postback.Rules{
		ValueMaps:        in.ValueMaps,
		Unmapped:         strings.TrimSpace(in.Unmapped),
		PayoutField:      strings.TrimSpace(in.PayoutField),
		ConversionKey:    in.ConversionKey,
		ConversionStatus: strings.TrimSpace(in.ConversionStatus),
		FireOn:           strings.TrimSpace(in.FireOn),
		ConversionDays:   in.ConversionDays,
	}
	if share := strings.Trim(strings.TrimSpace(string(in.PayoutShare)), `"`); share != "" && share != "null" {
		bp, err := postback.ParsePercent(share)
		if err != nil {
			return nil, &fieldError{"payout_share", err.Error()}
		}
		r.PayoutShareBP = bp
	}
	if err := r.Validate(); err != nil {
		var re *postback.RuleError
		if errors.As(err, &re) {
			return nil, &fieldError{re.Field, re.Msg}
		}
		return nil, &fieldError{"value_maps", err.Error()}
	}
	for field, m := range r.ValueMaps {
		for from, to := range m {
			if msg := textProblem(from + to); msg != "" {
				return nil, &fieldError{"value_maps", field + ": " + msg}
			}
		}
	}
	r.Normalize() // an unmapped policy without maps means nothing, and is dropped
	if r.IsZero() {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, &fieldError{"value_maps", err.Error()}
	}
	return b, nil
}

// rulesJSON are an endpoint's stored rules as the API shows them.
// Its fields are rulesInput's on purpose: the API shows the rules in the words it takes them.
type rulesJSON struct {
	ValueMaps map[string]map[string]string `json:"value_maps"`
	Unmapped  string                       `json:"unmapped"`
	// PayoutShare is the percent sent (70, 62.5), null for the whole payout.
	PayoutShare   json.RawMessage `json:"payout_share"`
	PayoutField   string          `json:"payout_field"`
	BodyTemplate  string          `json:"body_template"`
	BodyFormat    string          `json:"body_format"`
	BodySignature string          `json:"body_signature"`
	// Conversions with state: fire_on "every" (one postback per event)
	// unless set to "change".
	ConversionKey    []string `json:"conversion_key"`
	ConversionStatus string   `json:"conversion_status"`
	FireOn           string   `json:"fire_on"`
	ConversionDays   int      `json:"conversion_days"`
}

func conversionView(e db.Endpoint) rulesJSON {
	v := rulesView(e.PostbackRules)
	v.BodyTemplate, v.BodyFormat, v.BodySignature = e.BodyTemplate, e.BodyFormat, e.BodySignature
	return v
}

func rulesView(stored []byte) rulesJSON {
	v := rulesJSON{Unmapped: postback.UnmappedSend, PayoutShare: json.RawMessage("null"), PayoutField: postback.DefaultPayoutField,
		ConversionKey: []string{}, FireOn: postback.FireEvery, ConversionDays: postback.DefaultConversionDays}
	r, err := postback.ParseRules(stored)
	if err != nil || r == nil {
		return v
	}
	if len(r.ConversionKey) > 0 {
		v.ConversionKey = r.ConversionKey
	}
	v.ConversionStatus, v.ConversionDays = r.ConversionStatus, r.Days()
	if r.FireOn != "" {
		v.FireOn = r.FireOn
	}
	v.ValueMaps = r.ValueMaps
	if r.Unmapped != "" {
		v.Unmapped = r.Unmapped
	}
	if r.PayoutShareBP > 0 {
		v.PayoutShare = json.RawMessage(postback.FormatPercent(r.PayoutShareBP))
	}
	if r.PayoutField != "" {
		v.PayoutField = r.PayoutField
	}
	return v
}
