package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/notifications"
	"github.com/hookline/hookline/worker/notify"
)

// onceChannelSecret carries a new webhook channel's signing secret from the
// POST to the page after its redirect, shown once.
const onceChannelSecret = "once_channel_secret"

// notificationsPage: GET /settings/notifications (admin)
func (s *Server) notificationsPage(c echo.Context) error {
	return s.renderNotifications(c, http.StatusOK, notifications.PageData{Style: "webhook"}, nil)
}

func (s *Server) renderNotifications(c echo.Context, status int, p notifications.PageData, chosen []string) error {
	ctx := c.Request().Context()
	rows, err := s.q.NotificationChannelList(ctx)
	if err != nil {
		return err
	}
	recent, err := s.q.NotificationRecent(ctx, 20)
	if err != nil {
		return err
	}
	m, name, secret := s.settingsMeta(c, "Notifications", onceChannelSecret)
	p.NewName, p.NewSecret = name, secret
	p.Now, p.CSRF = s.now(), principalOf(c).CSRF
	if chosen == nil { // a new form subscribes to everything about endpoints
		chosen = []string{string(notify.BreakerOpened), string(notify.EndpointWarned), string(notify.EndpointDisabled), string(notify.EndpointEnabled)}
	}
	for _, k := range notify.Kinds {
		p.Kinds = append(p.Kinds, notifications.Kind{Value: string(k.Kind), Label: k.Label, Checked: slices.Contains(chosen, string(k.Kind))})
	}
	for _, r := range rows {
		if r.PartnerID != nil {
			continue // a partner's contacts: on its partner page
		}
		v := channelView(r)
		if v.Style == "email" {
			v.URL = strings.Join(v.Recipients, ", ")
		}
		p.Channels = append(p.Channels, notifications.Channel{ID: v.ID, Name: v.Name, Style: v.Style, URL: v.URL, Kinds: v.Kinds,
			EndpointID: v.EndpointID, Enabled: v.Enabled, BreakerState: v.BreakerState, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt})
	}
	for _, r := range recent {
		p.Recent = append(p.Recent, notifications.Recent{Kind: r.Kind, Subject: r.Subject, Endpoint: r.EndpointName,
			State: r.State, Repeats: int(r.Repeats), CreatedAt: r.CreatedAt})
	}
	return s.render(c, status, notifications.Page(m, p))
}

// notificationChannelAdd: POST /settings/notifications (admin)
func (s *Server) notificationChannelAdd(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return badRequest("cannot read the form")
	}
	in := channelInput{Name: form.Get("name"), Style: form.Get("style"), URL: form.Get("url"), Kinds: form["kinds"],
		Recipients: splitAddresses(form.Get("recipients"))}
	valid, errs := s.validateChannel(in)
	page := notifications.PageData{Name: in.Name, Style: in.Style, URL: in.URL, Recipients: form.Get("recipients"), Errors: map[string]string{}}
	chosen := in.Kinds
	if chosen == nil {
		chosen = []string{}
	}
	if len(errs) == 0 {
		ch, secret, err := s.createChannel(c.Request().Context(), valid, principalOf(c).actor())
		var ae *apiError
		if errors.As(err, &ae) && ae.Field != "" {
			errs = append(errs, fieldError{ae.Field, ae.Message})
		} else if err != nil {
			return err
		} else {
			if secret != "" {
				s.addOnce(c, onceChannelSecret, ch.Name, secret)
			} else {
				s.addFlash(c, layout.FlashSuccess, "Channel \""+ch.Name+"\" added.")
			}
			return redirectAfterPost(c, "/settings/notifications")
		}
	}
	for _, fe := range errs {
		if page.Errors[fe.Field] == "" {
			page.Errors[fe.Field] = fe.Message
		}
	}
	return s.renderNotifications(c, http.StatusUnprocessableEntity, page, chosen)
}

// notificationChannelDelete: POST /settings/notifications/:id/delete (admin)
func (s *Server) notificationChannelDelete(c echo.Context) error {
	id, err := pathID(c, "notification channel")
	if err != nil {
		return err
	}
	if err := s.deleteChannel(c.Request().Context(), id, principalOf(c).actor()); err != nil {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "Channel deleted.")
	return redirectAfterPost(c, "/settings/notifications")
}

// notificationChannelTest: POST /settings/notifications/:id/test (admin)
func (s *Server) notificationChannelTest(c echo.Context) error {
	id, err := pathID(c, "notification channel")
	if err != nil {
		return err
	}
	ch, err := s.testChannel(c.Request().Context(), id, principalOf(c).actor())
	if err != nil {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "Test notification queued for \""+ch.Name+"\": it is sent within seconds; its delivery shows on the channel's endpoint page.")
	return redirectAfterPost(c, "/settings/notifications")
}

// splitAddresses reads a form's address list: one per line, or separated
// by commas or spaces.
func splitAddresses(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}
