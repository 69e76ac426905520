package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// apiBulkReplay: POST /api/v1/deliveries/replay {status, endpoint_id,
// event_type, q, since, until, dry_run} — counts (dry_run) or starts a
// bulk replay: 202 with the job, 200 {"count": 0} when nothing matches.
func (s *Server) apiBulkReplay(c echo.Context) error {
	// Alike in shape to attemptJSON and endpointInput by chance: the optional filters are pointers.
	var in struct {
		Status     string  `json:"status"`
		EndpointID *int64  `json:"endpoint_id"`
		EventType  *string `json:"event_type"`
		Q          *string `json:"q"`
		Since      *string `json:"since"`
		Until      *string `json:"until"`
		DryRun     bool    `json:"dry_run"`
	}
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	f := bulkReplay{Status: in.Status, EndpointID: in.EndpointID, EventType: in.EventType, Q: in.Q}
	for _, t := range []struct {
		name string
		text *string
		dst  **time.Time
	}{{"since", in.Since, &f.Since}, {"until", in.Until, &f.Until}} {
		if t.text == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, *t.text)
		if err != nil {
			return invalidField(t.name, "must be an RFC 3339 time, like 2026-05-01T00:00:00Z")
		}
		*t.dst = &at
	}
	ctx := c.Request().Context()
	if in.DryRun {
		n, err := s.countBulkReplay(ctx, &f)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"count": n})
	}
	job, ok, err := s.startBulkReplay(ctx, f, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	if !ok {
		return c.JSON(http.StatusOK, map[string]any{"count": 0})
	}
	v, err := s.replayJob(ctx, job.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, v)
}

// apiReplayJob: GET /api/v1/replays/:id — a bulk replay and its progress.
func (s *Server) apiReplayJob(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	v, err := s.replayJob(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// apiReplayJobCancel: POST /api/v1/replays/:id/cancel.
func (s *Server) apiReplayJobCancel(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.cancelReplayJob(ctx, id, apiKeyOf(c).actor()); err != nil {
		return err
	}
	v, err := s.replayJob(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
