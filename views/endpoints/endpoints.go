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

// PageSize is the rows a page of the table shows.
const PageSize = 100

// Filter is the table's query: search text, which endpoints, the order and
// the page.
type Filter struct {
	Q    string // name, partner or host contains
	Show string // "" (all) | "slow" | "open" | "disabled"
	Sort string // "name" | "p95" | "failures" | "dead" | "queue"
	Page int    // 1-based; 0 is the first
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
	if f.Page > 1 {
		v.Set("page", strconv.Itoa(f.Page))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// With returns f with another sort order, from its first page.
func (f Filter) With(sort string) Filter { f.Sort, f.Page = sort, 0; return f }

// AtPage returns f showing page n.
func (f Filter) AtPage(n int) Filter { f.Page = n; return f }

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
	Queue           int64 // Queue and Dead are read up to components.Counted + 1
	Dead            int64
}

// Table is the fragment's view model.
type Table struct {
	Filter     Filter
	Rows       []Row // the page's rows
	Matched    int   // endpoints the search and filter match, on every page
	Total      int   // endpoints before filtering
	Now        time.Time
	CanOperate bool
}

// First is the 1-based position of the page's first row.
func (t Table) First() int { return (max(t.Filter.Page, 1)-1)*PageSize + 1 }

// Pages is the number of pages the matched endpoints fill.
func (t Table) Pages() int { return max(1, (t.Matched+PageSize-1)/PageSize) }

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
