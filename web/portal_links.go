package web

// Portal access: the sign-in links the API and the partner page issue, and
// revoking a partner's links and sessions.

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/web/account"
	"github.com/jackc/pgx/v5"
)

// portalLink creates a sign-in link for a partner, audited as actor, and
// returns its URL (on base, the scheme and host) and expiry. An unknown
// partner is a 404, an archived one a 409.
func (s *Server) portalLink(ctx context.Context, partnerID int64, actor string) (string, time.Time, error) {
	base, err := s.publicBase()
	if err != nil {
		return "", time.Time{}, err
	}
	ttl := s.cfg.Portal.LinkTTL
	if ttl <= 0 {
		ttl = defaultPortalLinkTTL
	}
	token := account.RandomToken(32)
	var link db.PortalLinkCreateRow
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		p, err := q.PartnerGet(ctx, partnerID)
		if err != nil {
			return missing(err, "partner")
		}
		if p.ArchivedAt != nil {
			return conflict("", "the partner is archived; unarchive it to give it portal access")
		}
		link, err = q.PortalLinkCreate(ctx, db.PortalLinkCreateParams{
			PartnerID: partnerID, TokenHash: hashSessionID(token), CreatedBy: actor, ExpiresAt: s.now().Add(ttl)})
		if db.NoRows(err) {
			return conflict("", "the partner is archived; unarchive it to give it portal access")
		}
		if err != nil {
			return err
		}
		return audit(ctx, q, actor, "portal.link_create", "partner", partnerID,
			map[string]any{"link_id": link.ID, "expires_at": link.ExpiresAt.UTC().Format(time.RFC3339)})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return strings.TrimSuffix(base, "/") + portalPath + "/signin?token=" + token, link.ExpiresAt, nil
}

// revokePortal ends every session and unused link of a partner, in the
// caller's transaction (q), and reports how many.
func revokePortal(ctx context.Context, q *db.Queries, partnerID int64) (sessions, links int64, err error) {
	if sessions, err = q.PortalSessionRevokeAll(ctx, partnerID); err != nil {
		return 0, 0, err
	}
	if links, err = q.PortalLinkRevokeAll(ctx, partnerID); err != nil {
		return 0, 0, err
	}
	return sessions, links, nil
}

// publicBase is the scheme and host a link starts with: the configured
// public URL only. A link built from the request's Host header would let
// anyone who can reach hookline under another name (Host: attacker.invalid)
// mint links to that name, so without HOOKLINE_PUBLIC_URL there is none.
func (s *Server) publicBase() (string, error) {
	if s.cfg.Portal.PublicURL == "" {
		return "", &apiError{http.StatusConflict, "not_configured",
			"portal links need HOOKLINE_PUBLIC_URL: set it to the address partners reach hookline at, such as https://hooks.example.com", ""}
	}
	return s.cfg.Portal.PublicURL, nil
}
