// Package endpoints renders the endpoints table: every endpoint's breaker,
// P50/P95/P99 with 24 h sparklines on one scale per row, success rate,
// queue and dead letters, with sorting, filters, search and live refresh.
package endpoints

import (
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// TableID is the live-refreshed fragment.
const TableID = "endpoints-table"

// Filter is the table's query: search text, which endpoints, and the order.
type Filter struct {
	Q    string // name, partner or host contains
	Show string // "" (all) | "slow" | "open" | "disabled"
	Sort string // "name" | "p95" | "failures" | "dead" | "queue"
}

// Query is the filter as a query string, for links and the live refresh.
func (f Filter) Query() string {
	v := url.Values{}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	if f.Show != "" {
		v.Set("show", f.Show)
	}
	if f.Sort != "" && f.Sort != "name" {
		v.Set("sort", f.Sort)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// With returns f with another sort order.
func (f Filter) With(sort string) Filter { f.Sort = sort; return f }

// Row is one endpoint.
type Row struct {
	ID        int64
	Name      string
	Partner   string
	PartnerID int64
	Host      string // the host only: never a postback's query values
	Kind      string
	Breaker   components.BreakerData
	Latency   string // ok | slow | critical | "" (no data)
	P50       *float64
	P95       *float64
	P99       *float64
	RecentP95 *float64 // last 10 minutes: the early warning
	// FlaggedByRecent: the latency flag comes from RecentP95, which the
	// row then shows beside the 24 h figures.
	FlaggedByRecent bool
	Spark50         []float64 // 96 slots of 15 min; negative = no data
	Spark95         []float64
	Spark99         []float64
	MaxMs           float64 // the row's shared sparkline scale
	SuccessRate     *float64
	Samples         int64
	Failures        int32
	Queue           int64
	Dead            int64
}

// Table is the fragment's view model.
type Table struct {
	Filter     Filter
	Rows       []Row
	Total      int // endpoints before filtering
	Now        time.Time
	CanOperate bool
}

func rowClass(r Row) string {
	switch {
	case r.Latency == "critical" || r.Breaker.State == "open" && !r.Breaker.Paused:
		return "row-critical"
	case r.Latency == "slow" || r.Breaker.State == "half_open":
		return "row-warn"
	}
	return ""
}

func href(id int64) string { return "/endpoints/" + strconv.FormatInt(id, 10) }
