package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/web/account"
)

const ctxAPIKey = "hookline.api_key"

// apiPrincipal is the authenticated API key of a request.
type apiPrincipal struct {
	ID        int64
	Name      string
	Prefix    string
	Scope     string // account.ScopeIngest, ScopeRead or ScopeAdmin
	PartnerID *int64 // the partner the key is bound to, if any
}

// actor names the key in the audit log.
func (p apiPrincipal) actor() string { return "api_key:" + p.Prefix }

var errUnauthorized = &apiError{http.StatusUnauthorized, "unauthorized", "missing or invalid API key: send Authorization: Bearer <key>", ""}

// requireAPIKey authenticates "Authorization: Bearer <key>" against the
// stored hashes of unrevoked keys. What the key may then do is each
// route's scope (api_scope.go).
func (s *Server) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get("Authorization")
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="hookline"`)
			return errUnauthorized
		}
		row, err := s.q.APIKeyAuthenticate(c.Request().Context(), account.HashAPIKey(strings.TrimSpace(key)))
		if db.NoRows(err) {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="hookline", error="invalid_token"`)
			return errUnauthorized
		}
		if err != nil {
			return err
		}
		if row.LastUsedAt == nil || s.now().Sub(*row.LastUsedAt) > time.Minute {
			if err := s.q.APIKeyTouch(c.Request().Context(), row.ID); err != nil {
				return err
			}
		}
		c.Set(ctxAPIKey, apiPrincipal{ID: row.ID, Name: row.Name, Prefix: row.Prefix, Scope: row.Scope, PartnerID: row.PartnerID})
		return next(c)
	}
}

func apiKeyOf(c echo.Context) apiPrincipal {
	p, _ := c.Get(ctxAPIKey).(apiPrincipal)
	return p
}
