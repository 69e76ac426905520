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
	Portal     PortalAccess
	Contacts   Contacts
}

// PortalAccessID is the partner page's portal panel, swapped after a link
// is made or access revoked.
const PortalAccessID = "portal-access"

// PortalAccess is the partner's portal access: live sessions, links not
// used yet and, right after "Share portal link", the new link (shown once).
type PortalAccess struct {
	PartnerID  int64
	Archived   bool
	CanOperate bool
	CSRF       string
	Sessions   []PortalSession
	Links      []PortalLink
	NewURL     string
	NewExpires time.Time
	Now        time.Time
	Revoked    string // what a revoke just ended, for the status line
	// ManageEndpoints: the partner may, in its portal, create endpoints,
	// disable and enable them and change their event types.
	ManageEndpoints bool
}

// PortalSession is one live portal session of the partner.
type PortalSession struct {
	ID         int64
	CreatedAt  time.Time
	LastSeenAt time.Time
	UserAgent  string
}

// PortalLink is a sign-in link that has not been used yet.
type PortalLink struct {
	ID        int64
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

func (a PortalAccess) path(rest string) string {
	return "/partners/" + idStr(a.PartnerID) + rest
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
