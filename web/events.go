package web

// Events: the operations the API, the dashboard and the portal share to
// load one event and page through the event log.

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/db"
)

// deliveryStatusFilter maps the event log's status names to stored ones:
// awaiting_retry is a delivery that failed and waits for its next attempt
// (stored as failed, also accepted).
var deliveryStatusFilter = map[string]string{
	"pending":        "pending",
	"awaiting_retry": "failed",
	"failed":         "failed",
	"in_flight":      "in_flight",
	"delivered":      "delivered",
	"dead":           "dead",
}

// maxEventTypeFilter is the longest type filter: a type (200) and a "*".
const maxEventTypeFilter = 201

// eventPage runs the statement that serves the filters best: EventSearch
// for a search q; EventPageByEndpoints for an endpoint or partner filter;
// EventPageByStatus for a status most deliveries are not in;
// EventPageByDelivery (walking the log) for delivered; EventPage.
func (s *Server) eventPage(ctx context.Context, p db.EventPageByDeliveryParams, q string) ([]db.EventPageRow, error) {
	var rows []db.EventPageRow
	switch {
	case q != "":
		sp := db.EventSearchParams{
			Q: q, BeforeCreatedAt: p.BeforeCreatedAt, BeforeID: p.BeforeID, Since: p.Since, Until: p.Until,
			Type: p.Type, EndpointID: p.EndpointID, PartnerID: p.PartnerID, Status: p.Status, RowLimit: p.RowLimit,
		}
		if id, err := uuid.Parse(q); err == nil {
			sp.QID = &id
		}
		found, err := s.q.EventSearch(ctx, sp)
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			rows = append(rows, db.EventPageRow(r))
		}
	case p.EndpointID != nil || p.PartnerID != nil:
		found, err := s.q.EventPageByEndpoints(ctx, db.EventPageByEndpointsParams{
			EndpointID: p.EndpointID, PartnerID: p.PartnerID, Status: p.Status, BeforeCreatedAt: p.BeforeCreatedAt,
			BeforeID: p.BeforeID, Since: p.Since, Until: p.Until, Type: p.Type, RowLimit: p.RowLimit,
		})
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			rows = append(rows, db.EventPageRow(r))
		}
	case p.Status != nil && *p.Status != "delivered":
		found, err := s.q.EventPageByStatus(ctx, db.EventPageByStatusParams{
			Status: *p.Status, BeforeCreatedAt: p.BeforeCreatedAt, BeforeID: p.BeforeID, Since: p.Since, Until: p.Until,
			Type: p.Type, RowLimit: p.RowLimit,
		})
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			rows = append(rows, db.EventPageRow(r))
		}
	case p.Status != nil:
		// Nearly every delivery is delivered: walking the log finds a
		// page of them at once.
		found, err := s.q.EventPageByDelivery(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			rows = append(rows, db.EventPageRow(r))
		}
	default:
		return s.q.EventPage(ctx, db.EventPageParams{
			BeforeCreatedAt: p.BeforeCreatedAt, BeforeID: p.BeforeID, Since: p.Since, Until: p.Until,
			Type: p.Type, RowLimit: p.RowLimit,
		})
	}
	return rows, nil
}

// eventAttemptsSlack is how much earlier than its event's created_at (the
// database's clock) an attempt's started_at (the worker's clock) is still
// looked for: a worker's clock a day behind the database's would file its
// attempts under the wrong day in any case.
const eventAttemptsSlack = 24 * time.Hour

// eventRecord loads an event with its deliveries and every attempt, for
// the API's event read and the dashboard's event page. An unknown id is
// pgx.ErrNoRows.
func (s *Server) eventRecord(ctx context.Context, id uuid.UUID) (db.Event, []db.DeliveryListByEventRow, []db.DeliveryAttempt, error) {
	ev, err := s.q.EventGet(ctx, id)
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load event: %w", err)
	}
	dels, err := s.q.DeliveryListByEvent(ctx, id)
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load the event's deliveries: %w", err)
	}
	attempts, err := s.q.AttemptListByEvent(ctx, db.AttemptListByEventParams{EventID: id, NotBefore: ev.CreatedAt.Add(-eventAttemptsSlack)})
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load the event's attempts: %w", err)
	}
	return ev, dels, attempts, nil
}

// eventsPageLimit is how many events one page of the log shows.
const eventsPageLimit = 50
