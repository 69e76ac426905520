package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// apiEventCreate: POST /api/v1/events → 202 {id, deliveries}; a repeated
// idempotency key → 200 with the original event.
func (s *Server) apiEventCreate(c echo.Context) error {
	var in eventInput
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	if h := c.Request().Header.Get("Idempotency-Key"); h != "" {
		if in.IdempotencyKey != nil && *in.IdempotencyKey != h {
			return invalidField("idempotency_key", "differs from the Idempotency-Key header; send one or make them equal")
		}
		in.IdempotencyKey = &h
	}
	results, err := s.ingest(c.Request().Context(), apiKeyOf(c), []eventInput{in})
	if err != nil {
		return err
	}
	r := results[0]
	switch r.Status {
	case ingestRejected:
		return r.Error
	case ingestDuplicate:
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.JSON(http.StatusOK, map[string]any{"id": r.ID, "deliveries": nonNil(r.Deliveries), "duplicate": true})
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": r.ID, "deliveries": nonNil(r.Deliveries)})
}

// apiEventBatch: POST /api/v1/events/batch {events: [...]} → 202 with one
// result per event, in order. Invalid events are rejected individually.
func (s *Server) apiEventBatch(c echo.Context) error {
	// Each event is decoded on its own, so one that is malformed (a wrong
	// type, an unknown field) is rejected alone like any invalid event.
	var in struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	switch {
	case in.Events == nil:
		return invalidField("events", "is required: an array of events")
	case len(in.Events) == 0:
		return invalidField("events", "must contain at least one event")
	case len(in.Events) > maxBatchEvents:
		return invalidField("events", "at most 1000 events per batch")
	}
	events := make([]eventInput, len(in.Events))
	decodeErrs := make([]error, len(in.Events))
	for i, raw := range in.Events {
		decodeErrs[i] = decodeEvent(raw, &events[i])
	}
	results, err := s.ingestDecoded(c.Request().Context(), apiKeyOf(c), events, decodeErrs)
	if err != nil {
		return err
	}
	counts := map[string]int{ingestAccepted: 0, ingestDuplicate: 0, ingestRejected: 0}
	for i := range results {
		counts[results[i].Status]++
		if results[i].Deliveries == nil && results[i].Status != ingestRejected {
			results[i].Deliveries = []deliveryRef{}
		}
	}
	return c.JSON(http.StatusAccepted, map[string]any{
		"results":  results,
		"accepted": counts[ingestAccepted], "duplicate": counts[ingestDuplicate], "rejected": counts[ingestRejected],
	})
}

// decodeEvent decodes one event of a batch strictly.
func decodeEvent(raw json.RawMessage, dst *eventInput) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return &apiError{http.StatusUnprocessableEntity, "invalid_field", "each event must be a JSON object", ""}
	}
	return decodeStrict(raw, dst)
}

type attemptJSON struct {
	AttemptNo       int32     `json:"attempt_no"`
	StartedAt       time.Time `json:"started_at"`
	DurationMs      float64   `json:"duration_ms"`
	Outcome         string    `json:"outcome"`
	StatusCode      *int32    `json:"status_code"`
	ErrorClass      *string   `json:"error_class"`
	Error           *string   `json:"error"`
	ResponseExcerpt *string   `json:"response_excerpt"`
	// Egress is how the attempt left (proxy, TLS, client certificate,
	// credential kind), null when it never did.
	Egress *attemptEgressJSON `json:"egress"`
}

type deliveryJSON struct {
	ID             int64         `json:"id"`
	EndpointID     int64         `json:"endpoint_id"`
	EndpointName   string        `json:"endpoint_name"`
	EndpointKind   string        `json:"endpoint_kind"`
	Status         string        `json:"status"`
	AttemptCount   int32         `json:"attempt_count"`
	MaxAttempts    int32         `json:"max_attempts"`
	NextAttemptAt  *time.Time    `json:"next_attempt_at"`
	DeliveredAt    *time.Time    `json:"delivered_at"`
	DeadAt         *time.Time    `json:"dead_at"`
	LastError      *string       `json:"last_error"`
	LastErrorClass *string       `json:"last_error_class"`
	LastStatusCode *int32        `json:"last_status_code"`
	LastResponseMs *float64      `json:"last_response_ms"`
	ReplayCount    int32         `json:"replay_count"`
	CreatedAt      time.Time     `json:"created_at"`
	Attempts       []attemptJSON `json:"attempts"`
}

// apiEventGet: GET /api/v1/events/:id — the event, its deliveries and
// every attempt; of the key's own events for an ingest key, and of its
// partner's for a key bound to one (apiEventRecord).
func (s *Server) apiEventGet(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return notFound("event")
	}
	ev, dels, attempts, err := s.apiEventRecord(c.Request().Context(), apiKeyOf(c), id)
	if err != nil {
		return missing(err, "event")
	}
	byDelivery := map[int64][]attemptJSON{}
	for _, a := range attempts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], attemptJSON{
			AttemptNo: a.AttemptNo, StartedAt: a.StartedAt, DurationMs: a.DurationMs, Outcome: a.Outcome,
			StatusCode: a.StatusCode, ErrorClass: a.ErrorClass, Error: a.Error, ResponseExcerpt: a.ResponseExcerpt,
			Egress: attemptEgressOf(a).json(apiKeyOf(c).PartnerID != nil),
		})
	}
	out := make([]deliveryJSON, 0, len(dels))
	for _, d := range dels {
		dj := deliveryJSON{
			ID: d.ID, EndpointID: d.EndpointID, EndpointName: d.EndpointName, EndpointKind: d.EndpointKind,
			Status: d.Status, AttemptCount: d.AttemptCount, MaxAttempts: d.MaxAttempts,
			DeliveredAt: d.DeliveredAt, DeadAt: d.DeadAt, LastError: d.LastError,
			LastErrorClass: d.LastErrorClass, LastStatusCode: d.LastStatusCode,
			LastResponseMs: d.LastResponseMs, ReplayCount: d.ReplayCount, CreatedAt: d.CreatedAt,
			Attempts: nonNil(byDelivery[d.ID]),
		}
		if d.Status == "pending" || d.Status == "failed" {
			t := d.NextAttemptAt
			dj.NextAttemptAt = &t
		}
		out = append(out, dj)
	}
	return c.JSON(http.StatusOK, map[string]any{
		"id": ev.ID, "type": ev.Type, "payload": json.RawMessage(ev.Payload),
		"idempotency_key": ev.IdempotencyKey, "partner_id": ev.PartnerID,
		"created_at": ev.CreatedAt, "deliveries": out,
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
