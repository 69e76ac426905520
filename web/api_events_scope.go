package web

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/web/account"
)

// apiEventRecord is eventRecord as the key may see it.
//
// An ingest key reads only the events it posted (events.api_key_id,
// migration 00028): a producer checks its own events' deliveries, and a
// leaked producer key does not open the rest of the log, whose payloads
// are other producers' data. Any other event is not found, as if it did
// not exist, so ids cannot be probed.
//
// A key bound to a partner reads only that partner's events: posted for
// it, or with a delivery to one of its endpoints, as the partner's portal
// sees them, and with only those deliveries and their attempts.
func (s *Server) apiEventRecord(ctx context.Context, key apiPrincipal, id uuid.UUID) (db.Event, []db.DeliveryListByEventRow, []db.DeliveryAttempt, error) {
	if key.PartnerID == nil && key.Scope != account.ScopeIngest {
		return s.eventRecord(ctx, id)
	}
	var ev db.Event
	var err error
	if key.PartnerID != nil {
		ev, err = s.q.EventGetForPartner(ctx, db.EventGetForPartnerParams{ID: id, PartnerID: key.PartnerID})
	} else {
		ev, err = s.q.EventGet(ctx, id)
	}
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load event: %w", err)
	}
	if key.Scope == account.ScopeIngest && (ev.APIKeyID == nil || *ev.APIKeyID != key.ID) {
		// No row, as for an id that does not exist.
		return db.Event{}, nil, nil, fmt.Errorf("an event of another key: %w", pgx.ErrNoRows)
	}
	if key.PartnerID == nil {
		return s.eventRecord(ctx, id)
	}
	rows, err := s.q.PortalDeliveryListByEvent(ctx, db.PortalDeliveryListByEventParams{EventID: id, PartnerID: *key.PartnerID})
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load the event's deliveries: %w", err)
	}
	dels := make([]db.DeliveryListByEventRow, len(rows))
	for i, r := range rows {
		dels[i] = db.DeliveryListByEventRow(r)
	}
	attempts, err := s.q.PortalAttemptListByEvent(ctx, db.PortalAttemptListByEventParams{
		EventID: id, PartnerID: *key.PartnerID, NotBefore: ev.CreatedAt.Add(-eventAttemptsSlack)})
	if err != nil {
		return db.Event{}, nil, nil, fmt.Errorf("load the event's attempts: %w", err)
	}
	return ev, dels, attempts, nil
}
