package web

// Portal links over the API.

import (
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// apiPortalLinkCreate: POST /api/v1/partners/:id/portal-links → 201
// {url, expires_at}. A producer's backend calls it and redirects its
// customer to url.
func (s *Server) apiPortalLinkCreate(c echo.Context) error {
	id, err := pathID(c, "partner")
	if err != nil {
		return err
	}
	u, exp, err := s.portalLink(c.Request().Context(), id, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, map[string]any{"url": u, "expires_at": exp})
}

// apiPortalSessionsRevoke: DELETE /api/v1/partners/:id/portal-sessions —
// ends every portal session of the partner and revokes its unused links.
func (s *Server) apiPortalSessionsRevoke(c echo.Context) error {
	id, err := pathID(c, "partner")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var sess, links int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.PartnerGet(ctx, id); err != nil {
			return missing(err, "partner")
		}
		if sess, links, err = revokePortal(ctx, q, id); err != nil {
			return err
		}
		return audit(ctx, q, apiKeyOf(c).actor(), "portal.revoke_all", "partner", id,
			map[string]any{"sessions": sess, "links": links})
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"revoked_sessions": sess, "revoked_links": links})
}
