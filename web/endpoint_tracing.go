package web

import (
	"context"
	"fmt"

	"github.com/hookline/hookline/db"
)

// saveTraceparent writes whether the endpoint's attempts carry a
// traceparent header (send_traceparent in the API, "Send traceparent" in
// the form) after its create or update, in the same transaction; a nil
// setting (the portal's edits, a PATCH without the field) keeps what is
// stored. The header names the attempt's span only while traces are on
// (OTEL_*); with them off, nothing is sent whatever the setting.
func saveTraceparent(ctx context.Context, q *db.Queries, e db.Endpoint, cfg endpointConfig) (db.Endpoint, error) {
	if cfg.SendTraceparent == nil || *cfg.SendTraceparent == e.SendTraceparent {
		return e, nil
	}
	e, err := q.EndpointSetSendTraceparent(ctx, db.EndpointSetSendTraceparentParams{ID: e.ID, SendTraceparent: *cfg.SendTraceparent})
	if err != nil {
		return db.Endpoint{}, fmt.Errorf("save send_traceparent: %w", err)
	}
	return e, nil
}
