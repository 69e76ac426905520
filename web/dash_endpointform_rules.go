package web

// The endpoint form's conversion rules: value map rows, what an unmapped
// value does, and the payout share, read from the form and shown back.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/worker/postback"
)

// blankMapRows is how many empty value map rows the form offers below the
// filled ones (without JavaScript there is no "add row" button).
const blankMapRows = 2

// withBlankMapRows appends the empty rows.
func withBlankMapRows(rows []endpointform.MapRow) []endpointform.MapRow {
	for range max(blankMapRows, 3-len(rows)) {
		rows = append(rows, endpointform.MapRow{})
	}
	return rows
}

// rulesFormOf reads the rule fields of a posted form, as typed.
func rulesFormOf(c echo.Context) endpointform.Rules {
	unmapped := c.FormValue("unmapped") // parses the form
	form := c.Request().Form
	fields, froms, tos := form["map_field"], form["map_from"], form["map_to"]
	var rows []endpointform.MapRow
	for i := range fields {
		r := endpointform.MapRow{Field: strings.TrimSpace(fields[i])}
		if i < len(froms) {
			r.From = froms[i]
		}
		if i < len(tos) {
			r.To = tos[i]
		}
		if r.Field != "" || r.From != "" || r.To != "" {
			rows = append(rows, r)
		}
	}
	return endpointform.Rules{MapRows: withBlankMapRows(rows), Unmapped: unmapped,
		PayoutShare: strings.TrimSpace(c.FormValue("payout_share")), PayoutField: strings.TrimSpace(c.FormValue("payout_field")),
		BodyTemplate: c.FormValue("body_template"), BodyFormat: c.FormValue("body_format"), BodySignature: c.FormValue("body_signature"),
		ConversionKey: strings.TrimSpace(c.FormValue("conversion_key")), ConversionStatus: strings.TrimSpace(c.FormValue("conversion_status")),
		FireOn: c.FormValue("fire_on"), ConversionDays: strings.TrimSpace(c.FormValue("conversion_days"))}
}

// rulesInputOf turns the form's rules into API input, or says what is
// wrong with the rows (validateEndpoint checks the rest, as for the API).
func rulesInputOf(r endpointform.Rules) (rulesInput, string) {
	in := rulesInput{Unmapped: r.Unmapped, PayoutField: r.PayoutField,
		BodyTemplate: strings.ReplaceAll(r.BodyTemplate, "\r\n", "\n"), BodyFormat: r.BodyFormat, BodySignature: r.BodySignature}
	if r.PayoutShare != "" {
		in.PayoutShare, _ = json.Marshal(r.PayoutShare)
	}
	in.ConversionStatus, in.FireOn = r.ConversionStatus, r.FireOn
	for k := range strings.SplitSeq(r.ConversionKey, ",") {
		if k = strings.TrimSpace(k); k != "" {
			in.ConversionKey = append(in.ConversionKey, k)
		}
	}
	if r.ConversionDays != "" {
		n, err := strconv.Atoi(r.ConversionDays)
		if err != nil {
			n = -1 // validation names the field
		}
		in.ConversionDays = n
	}
	for i, row := range r.MapRows {
		if row.Field == "" && row.From == "" && row.To == "" {
			continue
		}
		if row.Field == "" {
			return in, fmt.Sprintf("row %d has no field", i+1)
		}
		if in.ValueMaps == nil {
			in.ValueMaps = valueMapsInput{}
		}
		m := in.ValueMaps[row.Field]
		if m == nil {
			m = map[string]string{}
			in.ValueMaps[row.Field] = m
		}
		if _, dup := m[row.From]; dup {
			return in, fmt.Sprintf("%q is mapped twice for %s", row.From, row.Field)
		}
		m[row.From] = row.To
	}
	return in, ""
}

// rulesForm shows stored (or preset) rules in the form.
func rulesForm(in rulesInput) endpointform.Rules {
	r := endpointform.Rules{Unmapped: in.Unmapped, PayoutField: in.PayoutField,
		BodyTemplate: in.BodyTemplate, BodyFormat: in.BodyFormat, BodySignature: in.BodySignature}
	if r.Unmapped == "" {
		r.Unmapped = postback.UnmappedSend
	}
	r.ConversionKey, r.ConversionStatus, r.FireOn = strings.Join(in.ConversionKey, ", "), in.ConversionStatus, in.FireOn
	if r.FireOn == "" {
		r.FireOn = postback.FireEvery
	}
	if in.ConversionDays != 0 {
		r.ConversionDays = strconv.Itoa(in.ConversionDays)
	}
	if s := strings.Trim(string(in.PayoutShare), `"`); s != "" && s != "null" {
		r.PayoutShare = s
	}
	p := postback.Rules{ValueMaps: in.ValueMaps}
	for _, field := range p.MapFields() {
		m := in.ValueMaps[field]
		froms := make([]string, 0, len(m))
		for k := range m {
			froms = append(froms, k)
		}
		sort.Strings(froms)
		for _, from := range froms {
			r.MapRows = append(r.MapRows, endpointform.MapRow{Field: field, From: from, To: m[from]})
		}
	}
	r.MapRows = withBlankMapRows(r.MapRows)
	return r
}

// presetRules are a preset's value maps as the new endpoint form shows them.
func presetRules(p postback.Preset) endpointform.Rules {
	return rulesForm(rulesInput{ValueMaps: p.ValueMaps})
}

// previewRules are the form's rules for its preview, nil when they are
// invalid (the form says why on save) or change nothing.
func previewRules(f endpointform.Form) *postback.Rules {
	in, msg := rulesInputOf(f.Rules)
	if msg != "" {
		return nil
	}
	stored, fe := checkRules(in)
	if fe != nil {
		return nil
	}
	r, _ := postback.ParseRules(stored)
	return r
}
