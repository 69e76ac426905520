package web

// Notification channels over the API.

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiChannelCreate: POST /api/v1/notification-channels → 201 with the
// signing secret (webhook channels), shown once.
func (s *Server) apiChannelCreate(c echo.Context) error {
	var in channelInput
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	in, errs := s.validateChannel(in)
	if len(errs) > 0 {
		return invalidField(errs[0].Field, errs[0].Message)
	}
	ch, secret, err := s.createChannel(c.Request().Context(), in, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	url := in.URL
	if in.Style == "email" {
		url = ""
	}
	return c.JSON(http.StatusCreated, channelJSON{ID: ch.ID, Name: ch.Name, Style: ch.Style, URL: url, Recipients: in.Recipients, Kinds: ch.Kinds,
		EndpointID: ch.EndpointID, Enabled: true, BreakerState: "closed", CreatedBy: ch.CreatedBy, CreatedAt: ch.CreatedAt, Secret: secret})
}

// apiChannelList: GET /api/v1/notification-channels
func (s *Server) apiChannelList(c echo.Context) error {
	rows, err := s.q.NotificationChannelList(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]channelJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, channelView(r))
	}
	return c.JSON(http.StatusOK, map[string]any{"channels": out})
}

// apiChannelDelete: DELETE /api/v1/notification-channels/:id → 204
func (s *Server) apiChannelDelete(c echo.Context) error {
	id, err := pathID(c, "notification channel")
	if err != nil {
		return err
	}
	if err := s.deleteChannel(c.Request().Context(), id, apiKeyOf(c).actor()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiChannelTest: POST /api/v1/notification-channels/:id/test → 202
func (s *Server) apiChannelTest(c echo.Context) error {
	id, err := pathID(c, "notification channel")
	if err != nil {
		return err
	}
	if _, err := s.testChannel(c.Request().Context(), id, apiKeyOf(c).actor()); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"queued": true})
}
