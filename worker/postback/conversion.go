package postback

import (
	"encoding/json"
	"fmt"
	"strings"
)

// How a postback endpoint fires: once per event (the default, and what
// every endpoint saved before conversions existed does), or once per
// change of a conversion's status.
const (
	FireEvery  = "every"
	FireChange = "change"
)

// Conversion state is kept this many days after a conversion last changed
// unless the endpoint says otherwise; trackers accept adjustments for
// weeks (Affise and Keitaro for as long as the click lives), and a status
// arriving after its state expired fires as if it were the first.
const (
	DefaultConversionDays = 90
	maxConversionDays     = 730
	maxConversionKeys     = 4
)

// ConversionError is an event that lacks what identifies its conversion
// (a key field or the status): the worker records it as missing_field.
type ConversionError struct{ Field, Msg string }

func (e *ConversionError) Error() string {
	return fmt.Sprintf("conversion field %q %s", e.Field, e.Msg)
}

// Stateful reports whether the endpoint fires per conversion status change.
func (r *Rules) Stateful() bool {
	return r != nil && r.FireOn == FireChange && len(r.ConversionKey) > 0 && r.ConversionStatus != ""
}

// Days is how long the endpoint's conversion state is kept.
func (r *Rules) Days() int {
	if r == nil || r.ConversionDays == 0 {
		return DefaultConversionDays
	}
	return r.ConversionDays
}

// validateConversion checks the conversion fields.
func (r *Rules) validateConversion() error {
	switch r.FireOn {
	case "", FireEvery, FireChange:
	default:
		return &RuleError{"fire_on", fmt.Sprintf("%q is not one of every, change", r.FireOn)}
	}
	if len(r.ConversionKey) > maxConversionKeys {
		return &RuleError{"conversion_key", fmt.Sprintf("names at most %d fields", maxConversionKeys)}
	}
	seen := map[string]bool{}
	for _, k := range r.ConversionKey {
		if len(k) > maxMacroName || !validMacroName(k) {
			return &RuleError{"conversion_key", fmt.Sprintf("%q is not a field name or path: letters, digits, \"_\", \".\" and \"-\", starting with a letter or \"_\"", k)}
		}
		if seen[k] {
			return &RuleError{"conversion_key", fmt.Sprintf("%q is named twice", k)}
		}
		seen[k] = true
	}
	if s := r.ConversionStatus; s != "" && (len(s) > maxMacroName || !validMacroName(s)) {
		return &RuleError{"conversion_status", fmt.Sprintf("%q is not a field name or path", s)}
	}
	if r.ConversionDays < 0 || r.ConversionDays > maxConversionDays {
		return &RuleError{"conversion_days", fmt.Sprintf("must be between 1 and %d", maxConversionDays)}
	}
	if r.FireOn == FireChange {
		switch {
		case len(r.ConversionKey) == 0:
			return &RuleError{"conversion_key", `is required with fire_on "change": the payload field(s) that identify a conversion, e.g. ["transaction_id"]`}
		case r.ConversionStatus == "":
			return &RuleError{"conversion_status", `is required with fire_on "change": the payload field holding the conversion's status, e.g. "status"`}
		}
	}
	return nil
}

// Conversion is what one event says about its conversion.
type Conversion struct {
	// Key identifies the conversion within its endpoint: the key field's
	// value, or for several fields their values as a JSON array (so no
	// value can be mistaken for a separator).
	Key string
	// Producer is the status in the producer's word; Status is the word
	// the tracker gets (Producer through the field's value map, or as is).
	Producer, Status string
	// Payout is the payout as sent (after the share), "" when the payload
	// has none; Currency is the payload's currency, "" when none.
	Payout, Currency string
}

// Conversion reads the conversion an event belongs to. A missing key or
// status is a ConversionError: without them the event cannot be compared
// with the ones before it.
func (r *Rules) Conversion(v Values) (Conversion, error) {
	var c Conversion
	keys := make([]string, len(r.ConversionKey))
	for i, k := range r.ConversionKey {
		val, err := v.lookup(k)
		if err != nil || strings.TrimSpace(val) == "" {
			return c, &ConversionError{Field: k, Msg: "(conversion_key) is missing or empty: the event cannot be matched to a conversion"}
		}
		keys[i] = val
	}
	if len(keys) == 1 {
		c.Key = keys[0]
	} else {
		b, _ := json.Marshal(keys)
		c.Key = string(b)
	}
	st, err := v.lookup(r.ConversionStatus)
	if err != nil || strings.TrimSpace(st) == "" {
		return c, &ConversionError{Field: r.ConversionStatus, Msg: "(conversion_status) is missing or empty"}
	}
	c.Producer, c.Status = st, st
	if to, ok := r.ValueMaps[r.ConversionStatus][st]; ok {
		c.Status = to
	}
	c.Currency, _ = v.lookup("currency")
	if p, err := v.lookup(r.payoutField()); err == nil {
		c.Payout = p
		if r.PayoutShareBP > 0 {
			if shared, err := Share(p, r.PayoutShareBP, CurrencyDecimals(c.Currency)); err == nil {
				c.Payout = shared
			}
		}
	}
	return c, nil
}

// rejectionWords are the producer's words for a conversion taken back.
// The conversions view counts a status as a rejection when the producer
// (or, failing that, the tracker) calls it one of these.
var rejectionWords = map[string]bool{
	"rejected": true, "declined": true, "reversed": true, "reversal": true, "refunded": true, "refund": true,
	"chargeback": true, "cancelled": true, "canceled": true, "fraud": true, "trash": true, "invalid": true,
}

// IsRejection reports whether a conversion's status takes it back.
func (c Conversion) IsRejection() bool {
	return rejectionWords[strings.ToLower(c.Producer)] || rejectionWords[strings.ToLower(c.Status)]
}
