package web

// Deliveries: the resend the API, the dashboard and the portal share.

import (
	"context"
	"errors"
	"net/http"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// resend makes one delivery pending again, due now, with a fresh attempt
// budget (DeliveryResend), audits it and wakes the workers. The worker
// sends it through the endpoint's breaker and rate limit like any other.
func (s *Server) resend(ctx context.Context, id int64, actor string) (string, error) {
	var status string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		before, err := q.DeliveryGet(ctx, id)
		if err != nil {
			return missing(err, "delivery")
		}
		row, err := q.DeliveryResend(ctx, id)
		if db.NoRows(err) {
			// In flight, now or since it was read: the worker holds it.
			return conflict("", "the delivery is being sent right now; resend it once the attempt has finished")
		}
		if err != nil {
			return err
		}
		status = row.Status
		if err := audit(ctx, q, actor, "delivery.resend", "delivery", id, map[string]any{
			"event_id": before.EventID.String(), "endpoint_id": before.EndpointID, "previous_status": before.Status,
		}); err != nil {
			return err
		}
		return q.EventNotify(ctx, db.NotifyQueueLimit)
	})
	return status, err
}

// resendFromPage resends a delivery from a page's form and goes back to
// back with a flash: done, or busy while the delivery is in flight.
func (s *Server) resendFromPage(c echo.Context, id int64, actor, back, busy, done string) error {
	if _, err := s.resend(c.Request().Context(), id, actor); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			s.addFlash(c, layout.FlashError, busy)
			return redirectAfterPost(c, back)
		}
		return err
	}
	s.addFlash(c, layout.FlashSuccess, done)
	return redirectAfterPost(c, back)
}
