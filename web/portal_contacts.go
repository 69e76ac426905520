package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/portal"
)

// portalContactsPage: GET /portal/notifications — the partner's own
// notification contacts, editable while its operator allows them.
func (s *Server) portalContactsPage(c echo.Context) error {
	v, err := partnerContacts(c.Request().Context(), s.q, portalOf(c).PartnerID)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.ContactsPage(s.portalMeta(c, "Notifications", portal.NavNotifications),
		portal.Contacts{Enabled: v.Enabled, Emails: strings.Join(v.Emails, "\n"), WebhookURL: v.WebhookURL, Kinds: v.Kinds, CSRF: portalOf(c).CSRF}))
}

// portalContactsSave: POST /portal/notifications {emails, webhook_url} —
// the partner sets its contacts; a webhook URL passes the partner guard
// and is dialled with it. Audited as the partner's.
func (s *Server) portalContactsSave(c echo.Context) error {
	ctx := c.Request().Context()
	pr := portalOf(c)
	p, err := s.q.PartnerGet(ctx, pr.PartnerID)
	if err != nil {
		return missing(err, "partner")
	}
	cur, err := partnerContacts(ctx, s.q, p.ID)
	if err != nil {
		return err
	}
	if !cur.Enabled {
		return &apiError{http.StatusForbidden, "forbidden", "notifications are not enabled for this partner", ""}
	}
	emails, hook := splitAddresses(c.FormValue("emails")), c.FormValue("webhook_url")
	in, errs := s.validateContacts(ctx, contactsInput{Emails: &emails, WebhookURL: &hook})
	page := portal.Contacts{Enabled: true, Emails: c.FormValue("emails"), WebhookURL: strings.TrimSpace(hook), Kinds: cur.Kinds, CSRF: pr.CSRF, Errors: map[string]string{}}
	if len(errs) > 0 {
		for _, fe := range errs {
			page.Errors[fe.Field] = fe.Message
		}
		return s.render(c, http.StatusUnprocessableEntity, portal.ContactsPage(s.portalMeta(c, "Notifications", portal.NavNotifications), page))
	}
	v, err := s.savePartnerContacts(ctx, p, in, pr.actor())
	if err != nil {
		return err
	}
	page.Emails, page.WebhookURL, page.NewSecret, page.Saved = strings.Join(v.Emails, "\n"), v.WebhookURL, v.WebhookSecret, true
	// The secret is in this answer only, so it is rendered, not redirected.
	return s.render(c, http.StatusOK, portal.ContactsPage(s.portalMeta(c, "Notifications", portal.NavNotifications), page))
}
