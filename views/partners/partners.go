// Package partners renders the partner pages: the list with each partner's
// endpoints at a glance, a partner's page, and the partner form.
package partners

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// Summary is one partner in the list.
type Summary struct {
	ID        int64
	Name      string
	Contact   string
	Archived  bool
	Endpoints []EndpointBrief
}

// EndpointBrief is an endpoint at a glance.
type EndpointBrief struct {
	ID      int64
	Name    string
	Kind    string
	Host    string
	Breaker components.BreakerData
	Latency string // ok | slow | critical | ""
	P95     *float64
	Dead    int64
}

// List is /partners.
type List struct {
	Partners     []Summary
	ShowArchived bool
	CanOperate   bool
}

// Detail is /partners/:id.
type Detail struct {
	Partner    Summary
	Notes      string
	CreatedAt  time.Time
	CanOperate bool
	CSRF       string
}

// Form is the partner form (create or edit).
type Form struct {
	ID      int64 // 0 when creating
	Name    string
	Contact string
	Notes   string
	Errors  map[string]string
	CSRF    string
}

func (f Form) action() string {
	if f.ID == 0 {
		return "/partners"
	}
	return "/partners/" + strconv.FormatInt(f.ID, 10)
}

func idStr(id int64) string { return strconv.FormatInt(id, 10) }
