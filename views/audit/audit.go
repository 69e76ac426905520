package audit

import (
	"net/url"

	"github.com/hookline/hookline/views/components"
)

// Filter is the log's query, as it stands in the URL; the CSV export
// takes the same.
type Filter struct {
	Actor      string
	Action     string // exactly, or a prefix ending in * (endpoint.*)
	TargetType string
	TargetID   string
	Since      string // datetime-local text, UTC
	Until      string
}

// Values is the filter as URL query values (empty ones left out).
func (f Filter) Values() url.Values {
	return components.Query(map[string]string{"actor": f.Actor, "action": f.Action, "target_type": f.TargetType,
		"target_id": f.TargetID, "since": f.Since, "until": f.Until})
}

// Active reports whether any filter is set.
func (f Filter) Active() bool { return len(f.Values()) > 0 }

// ExportURL is the CSV export of every entry the filter matches.
func (f Filter) ExportURL() string {
	if v := f.Values(); len(v) > 0 {
		return "/audit/export.csv?" + v.Encode()
	}
	return "/audit/export.csv"
}
