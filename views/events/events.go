// Package events renders the event log: every event, newest first, found by
// an id, an idempotency key or a search-key value, filtered by type,
// partner, endpoint, delivery status and time, and paged by a cursor.
package events

import (
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// PageData is /events.
type PageData struct {
	Filter    Filter
	Rows      []Row
	NextURL   string     // the "Older" page, "" on the last page
	NewEvents *NewEvents // on a first page: the new-events announcement
	Partners  []Option
	Endpoints []Option
	Now       time.Time
}

// Filter is the log's query, as it stands in the URL.
type Filter struct {
	Q          string
	Type       string
	PartnerID  int64
	EndpointID int64
	Status     string
	Since      string // datetime-local text, UTC
	Until      string
}

// Values is the filter as URL query values (empty ones left out).
func (f Filter) Values() url.Values {
	return components.Query(map[string]string{"q": f.Q, "type": f.Type, "partner_id": components.QueryID(f.PartnerID),
		"endpoint_id": components.QueryID(f.EndpointID), "status": f.Status, "since": f.Since, "until": f.Until})
}

// URL is the event log under this filter: what the overview's tiles and
// alerts, the dead letters and the endpoint page link to.
func (f Filter) URL() string {
	if v := f.Values(); len(v) > 0 {
		return "/events?" + v.Encode()
	}
	return "/events"
}

// TimeText is t as the filter's since and until hold it (UTC, to the
// minute); up rounds a partial minute up, for an until that must include t.
func TimeText(t time.Time, up bool) string {
	m := t.UTC().Truncate(time.Minute)
	if up && !m.Equal(t.UTC()) {
		m = m.Add(time.Minute)
	}
	return m.Format("2006-01-02T15:04")
}

// ReplayURL is the bulk replay form prefilled with this filter, when the
// filter is one a bulk replay can take (dead or delivered deliveries, of
// one endpoint or from a start time; no partner filter); "" otherwise.
func (f Filter) ReplayURL() string {
	if (f.Status != "dead" && f.Status != "delivered") || f.PartnerID != 0 || (f.EndpointID == 0 && f.Since == "") {
		return ""
	}
	v := url.Values{"status": {f.Status}, "preview": {"1"}}
	if f.EndpointID != 0 {
		v.Set("endpoint_id", strconv.FormatInt(f.EndpointID, 10))
	}
	for k, s := range map[string]string{"event_type": f.Type, "q": f.Q, "since": f.Since, "until": f.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return "/deliveries/replay?" + v.Encode()
}

// Active reports whether any filter is set.
func (f Filter) Active() bool { return len(f.Values()) > 0 }

// Option is a partner or endpoint in a select.
type Option struct {
	ID   int64
	Name string
}

// Row is one event.
type Row struct {
	ID             string
	Type           string
	CreatedAt      time.Time
	IdempotencyKey string
	SearchKeys     []KeyValue
	Deliveries     []Chip
}

// KeyValue is one search key of an event.
type KeyValue struct{ Key, Value string }

// Chip is one delivery of an event: its endpoint and status.
type Chip struct {
	Endpoint string
	Status   string
}

// Statuses are the delivery status filter's choices: value and label.
var Statuses = [][2]string{
	{"pending", "Pending"},
	{"awaiting_retry", "Awaiting retry"},
	{"in_flight", "In flight"},
	{"delivered", "Delivered"},
	{"dead", "Dead"},
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// NewEvents announces events that arrived after the page was loaded,
// instead of shifting the list under the reader.
type NewEvents struct {
	PollURL string // the announcement's own URL, polled every 10 s
	ShowURL string // the first page with the same filters
	Count   int    // capped at NewEventsCap
}

// NewEventsCap is the most new events counted ("100+ new events").
const NewEventsCap = 100

// NewEventsURL is the poll URL of the first page of f whose newest event
// is at newest.
func NewEventsURL(f Filter, newest time.Time) string {
	v := f.Values()
	v.Set("after", newest.UTC().Format(time.RFC3339Nano))
	return "/events/new?" + v.Encode()
}

// ShowURL is the first page of f.
func ShowURL(f Filter) string {
	if !f.Active() {
		return "/events"
	}
	return "/events?" + f.Values().Encode()
}

func newText(n int) string {
	switch {
	case n >= NewEventsCap:
		return strconv.Itoa(NewEventsCap) + "+ new events"
	case n == 1:
		return "1 new event"
	}
	return strconv.Itoa(n) + " new events"
}
