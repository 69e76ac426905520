// Package conversions renders the conversions of postback endpoints that
// fire on a status change: the counts per partner and day, the
// conversions themselves and each one's history. The dashboard and the
// partner portal show the same body in their own shells.
package conversions

import (
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// Option is one choice of a filter's select.
type Option struct{ Value, Label string }

// Filter is the view's query, as it stands in the URL.
type Filter struct {
	Base      string // /conversions or /portal/conversions
	Partner   string
	Endpoint  string
	Status    string
	From, To  string   // days, YYYY-MM-DD (UTC)
	Partners  []Option // the dashboard's partner choice; none in the portal
	Endpoints []Option
}

// Values is the filter as URL query values (empty ones left out).
func (f Filter) Values() url.Values {
	return components.Query(map[string]string{"partner_id": f.Partner, "endpoint_id": f.Endpoint, "status": f.Status, "from": f.From, "to": f.To})
}

// Day is one partner's decisions on one UTC day.
type Day struct {
	Partner                             string
	Day                                 string
	Fired, Suppressed, Rejected, Failed int64
	Payout                              string // "12.50 EUR, 3 USD"; "" for none
}

// Row is one conversion as it stands.
type Row struct {
	Partner, Endpoint string
	EndpointID        int64
	Key               string
	Status, Producer  string // "" before the tracker accepted any
	Payout            string // with its currency
	Sending           string // a status being sent now, ""
	UpdatedAt         time.Time
}

// HistoryHref is the row's history page under base.
func (r Row) HistoryHref(base string) string {
	v := url.Values{}
	v.Set("endpoint_id", strconv.FormatInt(r.EndpointID, 10))
	v.Set("key", r.Key)
	return base + "/history?" + v.Encode()
}

// PageData is the conversions view.
type PageData struct {
	Filter  Filter
	Days    []Day
	Rows    []Row
	NextURL string
	Now     time.Time
}

// Step is one decision about a conversion.
type Step struct {
	At               time.Time
	EventID          string
	EventHref        string
	DeliveryID       int64
	Attempt          int32
	Producer, Status string
	Outcome, Reason  string
	Rejection        bool
	Payout           string
}

// HistoryData is one conversion's history.
type HistoryData struct {
	Base     string
	Endpoint string
	Key      string
	Steps    []Step
	Now      time.Time
}
