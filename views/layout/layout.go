// Package layout owns the dashboard's page shell: the document head with the
// stylesheet and scripts, the top navigation, the signed-in user with the
// logout form, flash messages, the main landmark and the footer, plus the
// friendly error page. Page packages wrap their content in Page.
package layout

import (
	"net/http"
	"strconv"
)

// Navigation keys, the values of PageMeta.Nav.
const (
	NavOverview    = "overview"
	NavEndpoints   = "endpoints"
	NavEvents      = "events"
	NavConversions = "conversions"
	NavDeadLetters = "dead-letters"
	NavPartners    = "partners"
	NavAudit       = "audit"
	NavSettings    = "settings"
)

// Roles, least to most privileged (the same values as web/account).
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
	FlashInfo    = "info"
)

// htmxConfig is read by htmx from <meta name="htmx-config">:
//   - includeIndicatorStyles off: hookline.css styles .htmx-indicator, and
//     htmx would otherwise inject an inline <style> (blocked by a strict CSP).
//   - 422 responses are swapped, so a handler can answer an invalid htmx form
//     with the form and its field errors; other 4xx/5xx are not swapped and
//     hookline.js shows a flash instead.
//   - no history cache: htmx would copy pages, including a secret shown once,
//     into localStorage; on back/forward the page is fetched again instead.
const htmxConfig = `{"includeIndicatorStyles":false,"historyCacheSize":0,"refreshOnHistoryMiss":true,` +
	`"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},` +
	`{"code":"422","swap":true},{"code":"[45]..","swap":false,"error":true},{"code":"...","swap":false}]}`

// HTMXConfig is htmxConfig for other page shells (the partner portal's),
// so every page configures htmx the same way.
const HTMXConfig = htmxConfig

// Element ids of the shell, for links and htmx targets.
const (
	MainID    = "main"
	FlashesID = "flashes"
)

// User is the signed-in user as the shell shows it.
type User struct {
	Email string
	Role  string // viewer | operator | admin
}

// CanOperate reports whether u may change things (replay, pause, edit):
// operators and admins. Pages use it to hide buttons a viewer cannot use;
// the server still checks every request.
func (u *User) CanOperate() bool {
	return u != nil && (u.Role == RoleOperator || u.Role == RoleAdmin)
}

// IsAdmin reports whether u may manage users and API keys.
func (u *User) IsAdmin() bool { return u != nil && u.Role == RoleAdmin }

// Flash is a one-time message shown above the page content.
type Flash struct {
	Kind    string // success | error | info
	Message string
}

// PageMeta is what the shell needs to know about a page.
type PageMeta struct {
	Title     string // "Endpoints" → <title>Endpoints · hookline</title>
	Nav       string // active nav item, one of the Nav constants
	User      *User  // nil on the login page: no navigation, no logout
	CSRFToken string // <meta name="csrf-token"> and the logout form
	Flashes   []Flash
	Version   string // footer: "hookline v0.1.0"
	// Stale, when set, says the page was read from a replica that is
	// behind the primary, and how far.
	Stale string
}

// NavItem is one link of the top navigation.
type NavItem struct {
	Key   string
	Label string
	Href  string
}

// NavItems returns the navigation u may see, in order. Settings (API keys
// and users) is for admins only.
func NavItems(u *User) []NavItem {
	if u == nil {
		return nil
	}
	items := []NavItem{
		{NavOverview, "Overview", "/"},
		{NavEndpoints, "Endpoints", "/endpoints"},
		{NavEvents, "Events", "/events"},
		{NavConversions, "Conversions", "/conversions"},
		{NavDeadLetters, "Dead letters", "/dead-letters"},
		{NavPartners, "Partners", "/partners"},
		{NavAudit, "Audit", "/audit"},
	}
	if u.IsAdmin() {
		items = append(items, NavItem{NavSettings, "Settings", "/settings/api-keys"})
	}
	return items
}

// documentTitle is the <title>: "Endpoints · hookline", or "hookline".
func documentTitle(title string) string {
	if title == "" {
		return "hookline"
	}
	return title + " · hookline"
}

func flashClass(kind string) string {
	switch kind {
	case FlashSuccess, FlashError:
		return "flash flash-" + kind
	}
	return "flash flash-info"
}

func footerText(version string) string {
	if version == "" {
		return "hookline"
	}
	return "hookline " + version
}

// StatusMessage is the default text of the error page for an HTTP status.
// It never contains internal details.
func StatusMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "The request was not understood. Check the address or the form and try again."
	case http.StatusUnauthorized:
		return "Please sign in to continue."
	case http.StatusForbidden:
		return "Your role does not allow this. Ask an admin if you need access."
	case http.StatusNotFound:
		return "There is nothing at this address. It may have been removed, or the link is wrong."
	case http.StatusMethodNotAllowed:
		return "That action is not available here."
	case http.StatusConflict:
		return "Someone else changed this first. Reload and try again."
	case http.StatusRequestEntityTooLarge:
		return "The request is too large."
	case http.StatusUnprocessableEntity:
		return "Some of the input is not valid."
	case http.StatusTooManyRequests:
		return "Too many requests. Wait a moment and try again."
	case http.StatusServiceUnavailable:
		return "hookline cannot reach its database right now. Deliveries resume on their own once it is back; try again in a moment."
	}
	if status >= 500 {
		return "Something went wrong on our side. It has been logged; try again in a moment."
	}
	return "Something went wrong."
}

// errorHeading is the error page's heading: "Page not found".
func errorHeading(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Page not found"
	case http.StatusServiceUnavailable:
		return "Temporarily unavailable"
	}
	if text := http.StatusText(status); text != "" {
		return text
	}
	return "Error"
}

// errorTitle is the error page's <title>: "404 · Page not found".
func errorTitle(status int) string {
	return strconv.Itoa(status) + " · " + errorHeading(status)
}
