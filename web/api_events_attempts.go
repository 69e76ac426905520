package web

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// endpointAttemptJSON is an attempt as the event read shows it, with the
// ids that place it in the endpoint's log.
type endpointAttemptJSON struct {
	ID         int64     `json:"id"`
	DeliveryID int64     `json:"delivery_id"`
	EventID    uuid.UUID `json:"event_id"`
	attemptJSON
	DeliveryStatus string `json:"delivery_status"`
}

// apiEndpointAttempts: GET /api/v1/endpoints/:id/attempts — an endpoint's
// attempt log, newest first, paged by an opaque cursor:
// ?outcome=ok|failed&status_code=&since=&until=&limit=&cursor=.
func (s *Server) apiEndpointAttempts(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	p := db.AttemptPageByEndpointParams{EndpointID: id, RowLimit: int32(limit + 1)}
	if p.Since, p.Until, err = timeRangeParams(c); err != nil {
		return err
	}
	switch c.QueryParam("outcome") {
	case "":
	case "ok":
		ok := true
		p.OkOnly = &ok
	case "failed":
		p.FailuresOnly = true
	default:
		return invalidField("outcome", "must be ok or failed")
	}
	if v := c.QueryParam("status_code"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			return invalidField("status_code", "must be an HTTP status code, 100 to 599")
		}
		code := int32(n)
		p.StatusCode = &code
	}
	if v := c.QueryParam("cursor"); v != "" {
		t, idText, ok := decodeCursor(v)
		aid, err := strconv.ParseInt(idText, 10, 64)
		if !ok || err != nil {
			return invalidField("cursor", "is not a cursor from this list; pass next_cursor unchanged")
		}
		p.BeforeStartedAt, p.BeforeID = &t, &aid
	}
	ctx := c.Request().Context()
	if _, err := s.q.EndpointGet(ctx, id); err != nil {
		return missing(err, "endpoint")
	}
	rows, err := s.q.AttemptPageByEndpoint(ctx, p)
	if err != nil {
		return err
	}
	rows, next := cutPage(rows, limit, func(r db.AttemptPageByEndpointRow) string {
		return encodeCursor(r.StartedAt, strconv.FormatInt(r.ID, 10))
	})
	out := make([]endpointAttemptJSON, len(rows))
	for i, a := range rows {
		out[i] = endpointAttemptJSON{
			ID: a.ID, DeliveryID: a.DeliveryID, EventID: a.EventID,
			attemptJSON: attemptJSON{
				AttemptNo: a.AttemptNo, StartedAt: a.StartedAt, DurationMs: a.DurationMs, Outcome: a.Outcome,
				StatusCode: a.StatusCode, ErrorClass: a.ErrorClass, Error: a.Error, ResponseExcerpt: a.ResponseExcerpt,
				Egress: attemptEgressCols{a.EgressProxy, a.TlsVersion, a.TlsResumed, a.ClientCertSubject, a.Credential}.json(false),
			},
			DeliveryStatus: a.DeliveryStatus,
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out, "next_cursor": next})
}
