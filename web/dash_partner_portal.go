package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/partners"
	"github.com/hookline/hookline/web/account"
)

// The partner page's portal panel: share a sign-in link, see and revoke
// the partner's sessions and unused links (operators).

// portalAccess is the panel's view model for a partner.
func (s *Server) portalAccess(ctx context.Context, c echo.Context, p db.Partner) (partners.PortalAccess, error) {
	pr := principalOf(c)
	now := s.now()
	a := partners.PortalAccess{PartnerID: p.ID, Archived: p.ArchivedAt != nil, CanOperate: pr.can(account.RoleOperator), CSRF: pr.CSRF, Now: now,
		ManageEndpoints: p.PortalManageEndpoints}
	sess, err := s.q.PortalSessionList(ctx, db.PortalSessionListParams{PartnerID: p.ID, IdleAfter: now.Add(-portalIdle), CreatedAfter: now.Add(-portalAbsolute)})
	if err != nil {
		return a, err
	}
	for _, r := range sess {
		a.Sessions = append(a.Sessions, partners.PortalSession{ID: r.ID, CreatedAt: r.CreatedAt, LastSeenAt: r.LastSeenAt, UserAgent: r.UserAgent})
	}
	links, err := s.q.PortalLinkList(ctx, db.PortalLinkListParams{PartnerID: p.ID, Now: &now})
	if err != nil {
		return a, err
	}
	for _, l := range links {
		a.Links = append(a.Links, partners.PortalLink{ID: l.ID, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt})
	}
	return a, nil
}

// renderPortalAccess answers a panel action: the panel for htmx, else the
// partner page.
func (s *Server) renderPortalAccess(c echo.Context, p db.Partner, edit func(*partners.PortalAccess)) error {
	a, err := s.portalAccess(c.Request().Context(), c, p)
	if err != nil {
		return err
	}
	edit(&a)
	if isHTMX(c) {
		return s.render(c, http.StatusOK, partners.PortalPanel(a))
	}
	if a.Revoked != "" {
		s.addFlash(c, layout.FlashInfo, a.Revoked)
		return c.Redirect(http.StatusSeeOther, "/partners/"+strconv.FormatInt(p.ID, 10))
	}
	// The new link is in this response only: render the page with it.
	return s.partnerDetail(c, p, &a)
}

// partnerPortalLink: POST /partners/:id/portal-links (operator) — "Share
// portal link": a new sign-in link, shown once.
func (s *Server) partnerPortalLink(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	u, exp, err := s.portalLink(c.Request().Context(), p.ID, principalOf(c).actor())
	if err != nil {
		return err
	}
	return s.renderPortalAccess(c, p, func(a *partners.PortalAccess) { a.NewURL, a.NewExpires = u, exp })
}

// partnerPortalManage: POST /partners/:id/portal-manage {allowed}
// (operator) — the partner page's switch for endpoint management in the
// portal.
func (s *Server) partnerPortalManage(c echo.Context) error {
	id, err := pathID(c, "partner")
	if err != nil {
		return err
	}
	allowed, err := strconv.ParseBool(c.FormValue("allowed"))
	if err != nil {
		return invalidField("allowed", "must be true or false")
	}
	p, err := s.editPartner(c.Request().Context(), id, principalOf(c).actor(), func(cur db.Partner) (partnerInput, error) {
		return partnerInput{Name: cur.Name, Contact: cur.Contact, Notes: cur.Notes, PortalManageEndpoints: &allowed}, nil
	})
	if err != nil {
		return err
	}
	done := "The partner can no longer add, disable or enable endpoints or change event types in its portal."
	if allowed {
		done = "The partner can now add, disable and enable its endpoints and change their event types in its portal."
	}
	return s.renderPortalAccess(c, p, func(a *partners.PortalAccess) { a.Revoked = done })
}

// partnerPortalRevokeAll: POST /partners/:id/portal-sessions/revoke
// (operator) — every session and unused link of the partner.
func (s *Server) partnerPortalRevokeAll(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var n, m int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		if n, m, err = revokePortal(ctx, q, p.ID); err != nil {
			return err
		}
		return audit(ctx, q, principalOf(c).actor(), "portal.revoke_all", "partner", p.ID, map[string]any{"sessions": n, "links": m})
	})
	if err != nil {
		return err
	}
	return s.renderPortalAccess(c, p, func(a *partners.PortalAccess) {
		a.Revoked = "Portal access revoked: " + strconv.FormatInt(n, 10) + " sessions ended, " + strconv.FormatInt(m, 10) + " links revoked."
	})
}

// partnerPortalRevokeSession: POST /partners/:id/portal-sessions/:sid/revoke
// (operator)
func (s *Server) partnerPortalRevokeSession(c echo.Context) error {
	return s.partnerPortalRevokeOne(c, "sid", "portal.revoke_session", "Session ended: it is signed out on its next request.",
		func(ctx context.Context, q *db.Queries, id, partnerID int64) (int64, error) {
			return q.PortalSessionRevoke(ctx, db.PortalSessionRevokeParams{ID: id, PartnerID: partnerID})
		})
}

// partnerPortalRevokeLink: POST /partners/:id/portal-links/:lid/revoke
// (operator)
func (s *Server) partnerPortalRevokeLink(c echo.Context) error {
	return s.partnerPortalRevokeOne(c, "lid", "portal.revoke_link", "Link revoked: it can no longer sign in.",
		func(ctx context.Context, q *db.Queries, id, partnerID int64) (int64, error) {
			return q.PortalLinkRevoke(ctx, db.PortalLinkRevokeParams{ID: id, PartnerID: partnerID})
		})
}

func (s *Server) partnerPortalRevokeOne(c echo.Context, param, action, done string, revoke func(context.Context, *db.Queries, int64, int64) (int64, error)) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	id, ok := parseID(c.Param(param))
	if !ok {
		return notFound("portal access")
	}
	ctx := c.Request().Context()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		n, err := revoke(ctx, q, id, p.ID)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("portal access")
		}
		return audit(ctx, q, principalOf(c).actor(), action, "partner", p.ID, map[string]any{"id": id})
	})
	if err != nil {
		return err
	}
	return s.renderPortalAccess(c, p, func(a *partners.PortalAccess) { a.Revoked = done })
}
