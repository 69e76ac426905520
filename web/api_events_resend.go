package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiDeliveryResend: POST /api/v1/deliveries/:id/resend → 202 {id, status}.
// Any delivery but one in flight, delivered ones included (the partner
// lost it): it is queued again with the same webhook-id, audited.
func (s *Server) apiDeliveryResend(c echo.Context) error {
	id, err := pathID(c, "delivery")
	if err != nil {
		return err
	}
	status, err := s.resend(c.Request().Context(), id, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": id, "status": status})
}
