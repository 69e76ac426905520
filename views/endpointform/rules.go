package endpointform

import (
	"strconv"

	"github.com/hookline/hookline/views/components"
)

// MapRow is one value map entry as typed: the payload field, the
// producer's word and the tracker's.
type MapRow struct{ Field, From, To string }

// Rules are a postback's conversion rules as the form shows them. MapRows
// include blank rows, so the form works without JavaScript.
type Rules struct {
	MapRows                            []MapRow
	Unmapped, PayoutShare, PayoutField string
	// A POST postback's body: template, format and signature choice.
	BodyTemplate, BodyFormat, BodySignature string
	// Conversions with state: key fields (comma-separated), the status
	// field, every or change, and the days state is kept ("" default).
	ConversionKey, ConversionStatus, FireOn, ConversionDays string
}

// FireOnOptions are when a postback endpoint fires.
var FireOnOptions = []components.Option{
	{Value: "every", Label: "every event"},
	{Value: "change", Label: "only when a conversion's status changes"},
}

// BodyFormats are the body formats of a POST postback.
var BodyFormats = []components.Option{
	{Value: "", Label: "guess from the template ({ or [ is JSON)"},
	{Value: "json", Label: "JSON (application/json)"},
	{Value: "form", Label: "form (application/x-www-form-urlencoded)"},
}

// BodySignatures are how a POST postback's body may be signed.
var BodySignatures = []components.Option{
	{Value: "", Label: "unsigned"},
	{Value: "webhook", Label: "Standard Webhooks headers over the body"},
}

// UnmappedOptions are what a value the map lacks can do.
var UnmappedOptions = []components.Option{
	{Value: "send", Label: "send it as it is"},
	{Value: "skip", Label: "skip the postback (recorded as skipped)"},
	{Value: "fail", Label: "fail the delivery (a dead letter)"},
}

func mapRowID(i int, part string) string { return "map-" + part + "-" + strconv.Itoa(i) }
