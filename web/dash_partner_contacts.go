package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/partners"
	"github.com/hookline/hookline/web/account"
)

// contactsPanel is the partner page's notification contacts panel.
func (s *Server) contactsPanel(ctx context.Context, c echo.Context, partnerID int64) (partners.Contacts, error) {
	v, err := partnerContacts(ctx, s.q, partnerID)
	if err != nil {
		return partners.Contacts{}, err
	}
	pr := principalOf(c)
	return partners.Contacts{PartnerID: partnerID, Enabled: v.Enabled, Emails: v.Emails, WebhookURL: v.WebhookURL, Kinds: v.Kinds,
		CanOperate: pr.can(account.RoleOperator), CSRF: pr.CSRF}, nil
}

// partnerContactsToggle: POST /partners/:id/notification-contacts
// {enabled} (operator) — the partner page's opt-in for telling the
// partner's own contacts about its endpoints.
func (s *Server) partnerContactsToggle(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	enabled, err := strconv.ParseBool(c.FormValue("enabled"))
	if err != nil {
		return invalidField("enabled", "must be true or false")
	}
	if _, err := s.savePartnerContacts(c.Request().Context(), p, contactsInput{Enabled: &enabled}, principalOf(c).actor()); err != nil {
		return err
	}
	msg := "The partner's contacts no longer hear about its endpoints."
	if enabled {
		msg = "The partner's contacts now hear about its endpoints; it sets them in its portal (Notifications)."
	}
	s.addFlash(c, layout.FlashSuccess, msg)
	return redirectAfterPost(c, "/partners/"+strconv.FormatInt(p.ID, 10))
}

// apiPartnerContactsGet: GET /api/v1/partners/:id/notification-contacts
func (s *Server) apiPartnerContactsGet(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	v, err := partnerContacts(c.Request().Context(), s.q, p.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// apiPartnerContactsPatch: PATCH /api/v1/partners/:id/notification-contacts
// {enabled?, emails?, webhook_url?} — absent fields keep their value; an
// empty list or URL removes that contact. A new webhook's signing secret
// is in this answer only. Audited.
func (s *Server) apiPartnerContactsPatch(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	var in contactsInput
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	in, errs := s.validateContacts(c.Request().Context(), in)
	if len(errs) > 0 {
		return invalidField(errs[0].Field, errs[0].Message)
	}
	v, err := s.savePartnerContacts(c.Request().Context(), p, in, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
