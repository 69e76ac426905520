package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/web/account"
)

// keyScope is an API route's permission, on its line in routes.go: the route
// takes a key of any of the scopes named, or an admin key. A key bound to
// a partner is refused: such a route reads or acts across partners.
func keyScope(need ...string) echo.MiddlewareFunc { return scopeCheck(need, false) }

// partnerKeyScope is keyScope for a route that honours a key's partner: its
// handler posts, reads and lists only the events of apiKeyOf(c).PartnerID
// when the key has one.
func partnerKeyScope(need ...string) echo.MiddlewareFunc { return scopeCheck(need, true) }

func scopeCheck(need []string, partnerAware bool) echo.MiddlewareFunc {
	for _, n := range need {
		if !account.ValidScope(n) {
			panic("routes: unknown API key scope " + strconv.Quote(n))
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := apiKeyOf(c)
			if !account.ScopeAllows(key.Scope, need...) {
				return insufficientScope(c, need, fmt.Sprintf("this route needs the %s scope; the key has %q", scopeNames(need), key.Scope))
			}
			if key.PartnerID != nil && !partnerAware {
				return insufficientScope(c, need, fmt.Sprintf("the key is bound to partner %d, and this route acts across partners: use a key that is not bound to a partner", *key.PartnerID))
			}
			return next(c)
		}
	}
}

// insufficientScope answers 403 as RFC 6750 (section 3.1) has it: the
// error and the scopes the route takes in WWW-Authenticate, for clients
// that read the header, and the same in the JSON error.
func insufficientScope(c echo.Context, need []string, msg string) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(need, " ")+`"`)
	return &apiError{http.StatusForbidden, "insufficient_scope", msg, ""}
}

// scopeNames is `"admin"` or `"ingest" or "read"`.
func scopeNames(need []string) string {
	q := make([]string, len(need))
	for i, n := range need {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}

// errPartnerMismatch refuses an event for another partner than the key's.
func errPartnerMismatch(partnerID int64) *apiError {
	return &apiError{http.StatusForbidden, "partner_mismatch",
		fmt.Sprintf("the key is bound to partner %d: send partner_id %d or none", partnerID, partnerID), "partner_id"}
}
