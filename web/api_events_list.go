package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

type eventLogEntry struct {
	ID             uuid.UUID         `json:"id"`
	Type           string            `json:"type"`
	CreatedAt      time.Time         `json:"created_at"`
	IdempotencyKey *string           `json:"idempotency_key"`
	PartnerID      *int64            `json:"partner_id"`
	SearchKeys     map[string]string `json:"search_keys"`
	Deliveries     []deliveryRef     `json:"deliveries"`
}

// apiEventList: GET /api/v1/events — the event log, newest first, filtered
// and paged by an opaque cursor:
// ?q=&type=&partner_id=&endpoint_id=&status=&since=&until=&limit=&cursor=.
func (s *Server) apiEventList(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	p := db.EventPageByDeliveryParams{RowLimit: int32(limit + 1)}
	if p.Since, p.Until, err = timeRangeParams(c); err != nil {
		return err
	}
	if p.PartnerID, err = idParam(c, "partner_id"); err != nil {
		return err
	}
	// A key bound to a partner lists that partner's events only: those
	// with a delivery to one of its endpoints, as its portal does.
	key := apiKeyOf(c)
	if key.PartnerID != nil {
		if p.PartnerID != nil && *p.PartnerID != *key.PartnerID {
			return errPartnerMismatch(*key.PartnerID)
		}
		p.PartnerID = key.PartnerID
	}
	if p.EndpointID, err = idParam(c, "endpoint_id"); err != nil {
		return err
	}
	if v := c.QueryParam("status"); v != "" {
		st, ok := deliveryStatusFilter[v]
		if !ok {
			return invalidField("status", "must be one of pending, awaiting_retry, in_flight, delivered, dead")
		}
		p.Status = &st
	}
	if v := c.QueryParam("type"); v != "" {
		if len(v) > maxEventTypeFilter {
			return invalidField("type", "must be an event type (at most 200 characters), or a prefix ending in *")
		}
		p.Type = &v
	}
	q := c.QueryParam("q")
	if v := c.QueryParam("cursor"); v != "" {
		t, idText, ok := decodeCursor(v)
		id, err := uuid.Parse(idText)
		if !ok || err != nil {
			return invalidField("cursor", "is not a cursor from this list; pass next_cursor unchanged")
		}
		p.BeforeCreatedAt, p.BeforeID = &t, &id
	}

	ctx := c.Request().Context()
	rows, err := s.eventPage(ctx, p, q)
	if err != nil {
		return err
	}
	rows, next := cutPage(rows, limit, func(r db.EventPageRow) string { return encodeCursor(r.CreatedAt, r.ID.String()) })
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	refs := map[uuid.UUID][]deliveryRef{}
	switch {
	case len(ids) == 0:
	case key.PartnerID != nil: // the partner's deliveries only
		rs, err := s.q.PortalDeliveryRefsByEvents(ctx, db.PortalDeliveryRefsByEventsParams{EventIds: ids, PartnerID: *key.PartnerID})
		if err != nil {
			return err
		}
		for _, r := range rs {
			refs[r.EventID] = append(refs[r.EventID], deliveryRef{ID: r.ID, EndpointID: r.EndpointID, Status: r.Status})
		}
	default:
		rs, err := s.q.DeliveryRefsByEvents(ctx, ids)
		if err != nil {
			return err
		}
		for _, r := range rs {
			refs[r.EventID] = append(refs[r.EventID], deliveryRef{ID: r.ID, EndpointID: r.EndpointID, Status: r.Status})
		}
	}
	out := make([]eventLogEntry, len(rows))
	for i, r := range rows {
		out[i] = eventLogEntry{
			ID: r.ID, Type: r.Type, CreatedAt: r.CreatedAt, IdempotencyKey: r.IdempotencyKey, PartnerID: r.PartnerID,
			SearchKeys: searchKeyMap(r.SearchKeys, r.SearchValues), Deliveries: nonNil(refs[r.ID]),
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out, "next_cursor": next})
}
