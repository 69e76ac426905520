package postback

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// What a value map does with a value it has no entry for.
const (
	UnmappedSend = "send" // send the value as it is (the default)
	UnmappedSkip = "skip" // send nothing; the delivery is recorded as skipped
	UnmappedFail = "fail" // send nothing; the delivery fails for good
)

// DefaultPayoutField is the field a payout share applies to when the
// endpoint names none.
const DefaultPayoutField = "payout"

// Limits on a value map, so an endpoint row stays small.
const (
	maxMapFields  = 20
	maxMapEntries = 100
	maxMapText    = 128
)

// Rules are an endpoint's conversion settings, applied to each macro value
// at render: the payout share first, then the value maps. The zero value
// (or a nil *Rules) changes nothing, which is what every endpoint saved
// before rules existed has.
type Rules struct {
	// ValueMaps turns the producer's words into the tracker's, per macro
	// name: {"status": {"approved": "sale"}}. Keys are matched exactly
	// (case-sensitive), after any default has stood in for the value.
	ValueMaps map[string]map[string]string `json:"value_maps,omitempty"`
	// Unmapped is UnmappedSend ("" means it), UnmappedSkip or UnmappedFail:
	// what a value missing from its field's map does.
	Unmapped string `json:"unmapped,omitempty"`
	// PayoutShareBP is the share of the payout sent, in basis points
	// (7000 = 70 %); 0 sends the payout as it is. Basis points keep the
	// share exact: no float ever touches money.
	PayoutShareBP int `json:"payout_share_bp,omitempty"`
	// PayoutField is the macro the share applies to; "" means
	// DefaultPayoutField.
	PayoutField string `json:"payout_field,omitempty"`
	// ConversionKey names the payload field(s) (paths allowed) that
	// identify a conversion, ConversionStatus the field holding its
	// status; with FireOn FireChange an event fires only when its mapped
	// status differs from the one the tracker last accepted
	// (worker/conversion.go). ConversionDays is how long that state is
	// kept (DefaultConversionDays when 0).
	ConversionKey    []string `json:"conversion_key,omitempty"`
	ConversionStatus string   `json:"conversion_status,omitempty"`
	FireOn           string   `json:"fire_on,omitempty"`
	ConversionDays   int      `json:"conversion_days,omitempty"`
}

// RuleError is an invalid rule, naming the API field it came from.
type RuleError struct {
	Field string // value_maps, unmapped, payout_share or payout_field
	Msg   string
}

func (e *RuleError) Error() string { return e.Field + ": " + e.Msg }

// UnmappedError is a value its field's map has no entry for, under the
// policy skip or fail. The worker records it with class "unmapped_value":
// skipped (nothing sent, not a failure) or dead.
type UnmappedError struct {
	Field  string
	Value  string
	Policy string // UnmappedSkip or UnmappedFail
}

func (e *UnmappedError) Error() string {
	v := e.Value
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Sprintf("value %q of %q is not in the endpoint's value map (unmapped: %s)", v, e.Field, e.Policy)
}

// Skip reports whether the delivery is to be recorded as skipped rather
// than failed.
func (e *UnmappedError) Skip() bool { return e.Policy == UnmappedSkip }

// IsZero reports whether r changes nothing.
func (r *Rules) IsZero() bool {
	return r == nil || (len(r.ValueMaps) == 0 && r.PayoutShareBP == 0 && len(r.ConversionKey) == 0 && r.ConversionStatus == "" &&
		r.FireOn == "" && r.ConversionDays == 0)
}

// Normalize drops spellings of the defaults, so equal rules store equally
// and rules that change nothing store as nothing.
func (r *Rules) Normalize() {
	if r.Unmapped == UnmappedSend {
		r.Unmapped = ""
	}
	if r.PayoutField == DefaultPayoutField {
		r.PayoutField = ""
	}
	if len(r.ValueMaps) == 0 {
		r.ValueMaps = nil
		r.Unmapped = ""
	}
	if r.PayoutShareBP == 0 {
		r.PayoutField = ""
	}
	if r.FireOn == FireEvery {
		r.FireOn = ""
	}
	if len(r.ConversionKey) == 0 {
		r.ConversionKey = nil
	}
	if r.ConversionDays == DefaultConversionDays {
		r.ConversionDays = 0
	}
}

// Validate checks the rules as the API and the form accept them.
func (r *Rules) Validate() error {
	switch r.Unmapped {
	case "", UnmappedSend, UnmappedSkip, UnmappedFail:
	default:
		return &RuleError{"unmapped", fmt.Sprintf("%q is not one of send, skip, fail", r.Unmapped)}
	}
	if r.PayoutShareBP < 0 || r.PayoutShareBP > 10000 {
		return &RuleError{"payout_share", "must be more than 0 and at most 100 (percent)"}
	}
	if r.PayoutField != "" && (len(r.PayoutField) > maxMacroName || !validMacroName(r.PayoutField)) {
		return &RuleError{"payout_field", fmt.Sprintf("%q is not a field name: letters, digits, \"_\", \".\" and \"-\", starting with a letter or \"_\"", r.PayoutField)}
	}
	if err := r.validateConversion(); err != nil {
		return err
	}
	if len(r.ValueMaps) > maxMapFields {
		return &RuleError{"value_maps", fmt.Sprintf("maps at most %d fields", maxMapFields)}
	}
	for _, field := range r.MapFields() {
		m := r.ValueMaps[field]
		switch {
		case len(field) > maxMacroName || !validMacroName(field):
			return &RuleError{"value_maps", fmt.Sprintf("%q is not a field name: letters, digits, \"_\", \".\" and \"-\", starting with a letter or \"_\"", field)}
		case len(m) == 0:
			return &RuleError{"value_maps", fmt.Sprintf("the map of %q is empty", field)}
		case len(m) > maxMapEntries:
			return &RuleError{"value_maps", fmt.Sprintf("the map of %q has more than %d entries", field, maxMapEntries)}
		}
		for from, to := range m {
			for _, s := range []string{from, to} {
				if len(s) > maxMapText {
					return &RuleError{"value_maps", fmt.Sprintf("a value in the map of %q is longer than %d characters", field, maxMapText)}
				}
				if strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
					return &RuleError{"value_maps", fmt.Sprintf("a value in the map of %q holds a control character", field)}
				}
			}
		}
	}
	return nil
}

// MapFields returns the mapped fields, sorted.
func (r *Rules) MapFields() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.ValueMaps))
	for k := range r.ValueMaps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseRules decodes stored rules; empty, null or {} is nil (no rules).
func ParseRules(raw []byte) (*Rules, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "{}" {
		return nil, nil
	}
	var r Rules
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("postback rules: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("postback rules: %w", err)
	}
	if r.IsZero() {
		return nil, nil
	}
	return &r, nil
}

// payoutField is the field the share applies to.
func (r *Rules) payoutField() string {
	if r.PayoutField == "" {
		return DefaultPayoutField
	}
	return r.PayoutField
}

// apply turns the unencoded value of macro name into what is sent: the
// payout share (on the payout field's payload value only: a default is
// sent as written), then the field's value map.
func (r *Rules) apply(name, value string, fromDefault bool, v Values) (string, error) {
	if r.PayoutShareBP > 0 && !fromDefault && name == r.payoutField() {
		decimals := 2
		if cur, err := v.lookup("currency"); err == nil {
			decimals = CurrencyDecimals(cur)
		}
		shared, err := Share(value, r.PayoutShareBP, decimals)
		if err != nil {
			return "", &MissingFieldError{Field: name, Found: "not a number"}
		}
		value = shared
	}
	if m, ok := r.ValueMaps[name]; ok {
		to, ok := m[value]
		switch {
		case ok:
			return to, nil
		case r.Unmapped == UnmappedSkip || r.Unmapped == UnmappedFail:
			return "", &UnmappedError{Field: name, Value: value, Policy: r.Unmapped}
		}
	}
	return value, nil
}
