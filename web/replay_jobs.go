package web

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
)

// bulkReplay is a bulk replay's filter: the deliveries of one status (dead
// letters, or delivered ones to send again), optionally of one endpoint,
// of events of a type (exact, or a prefix ending in *), of the event a
// search-key value or idempotency key finds, and of events in [since,
// until). Without an endpoint a since is required, so no replay takes the
// whole history by accident.
type bulkReplay struct {
	Status     string     `json:"status"`
	EndpointID *int64     `json:"endpoint_id"`
	EventType  *string    `json:"event_type"`
	Q          *string    `json:"q"`
	Since      *time.Time `json:"since"`
	Until      *time.Time `json:"until"`
}

// validate normalises the filter and names the first field that is wrong.
func (f *bulkReplay) validate() error {
	if f.Status == "" {
		f.Status = "dead"
	}
	if f.Status != "dead" && f.Status != "delivered" {
		return invalidField("status", `must be "dead" (replay dead letters) or "delivered" (send delivered ones again)`)
	}
	if f.EndpointID != nil && *f.EndpointID <= 0 {
		return invalidField("endpoint_id", "must be an endpoint id")
	}
	for _, p := range []**string{&f.EventType, &f.Q} {
		if *p != nil && strings.TrimSpace(**p) == "" {
			*p = nil
		}
	}
	if f.EventType != nil && len(*f.EventType) > maxEventTypeFilter {
		return invalidField("event_type", "must be an event type (at most 200 characters), or a prefix ending in *")
	}
	if f.Q != nil && len(*f.Q) > 255 {
		return invalidField("q", "must be a search-key value or idempotency key (at most 255 bytes)")
	}
	if f.EndpointID == nil && f.Since == nil {
		return invalidField("since", "give an endpoint, a start time, or both: a replay never takes the whole history by accident")
	}
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		return invalidField("until", "must be after since")
	}
	return nil
}

func (f bulkReplay) countParams() db.DeliveryReplayCountParams {
	return db.DeliveryReplayCountParams{Status: f.Status, EndpointID: f.EndpointID, Since: f.Since, Until: f.Until, EventType: f.EventType, Q: f.Q}
}

// countBulkReplay validates the filter and counts what it matches (shown
// before the replay is confirmed). An unknown endpoint is a 404.
func (s *Server) countBulkReplay(ctx context.Context, f *bulkReplay) (int64, error) {
	if err := f.validate(); err != nil {
		return 0, err
	}
	if f.EndpointID != nil {
		if _, err := s.q.EndpointGet(ctx, *f.EndpointID); db.NoRows(err) {
			return 0, notFound("endpoint")
		} else if err != nil {
			return 0, fmt.Errorf("load the replay's endpoint: %w", err)
		}
	}
	n, err := s.q.DeliveryReplayCount(ctx, f.countParams())
	if err != nil {
		return 0, fmt.Errorf("count the replay's deliveries: %w", err)
	}
	return n, nil
}

// startBulkReplay counts the filter's deliveries and, when there are any,
// records the job (the worker re-queues it in batches) and audits it. It
// returns the job, or ok false when nothing matched (no job is made).
func (s *Server) startBulkReplay(ctx context.Context, f bulkReplay, actor string) (db.ReplayJob, bool, error) {
	n, err := s.countBulkReplay(ctx, &f)
	if err != nil || n == 0 {
		return db.ReplayJob{}, false, err
	}
	var job db.ReplayJob
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		job, err = q.ReplayJobCreate(ctx, db.ReplayJobCreateParams{
			Status: f.Status, EndpointID: f.EndpointID, EventType: f.EventType, Q: f.Q,
			Since: f.Since, Until: f.Until, Total: n, CreatedBy: actor,
		})
		if err != nil {
			return fmt.Errorf("record the replay: %w", err)
		}
		return audit(ctx, q, actor, "deliveries.replay", "replay_job", job.ID, map[string]any{
			"status": f.Status, "endpoint_id": f.EndpointID, "event_type": f.EventType, "search": f.Q != nil,
			"since": f.Since, "until": f.Until, "deliveries": n,
		})
	})
	if err != nil {
		return db.ReplayJob{}, false, err
	}
	return job, true, nil
}

// replayJobView is a bulk replay with how its deliveries are doing.
type replayJobView struct {
	ID         int64      `json:"id"`
	State      string     `json:"state"` // running | done | canceled
	Filter     bulkReplay `json:"filter"`
	Total      int64      `json:"total"`
	Replayed   int64      `json:"replayed"`
	Delivered  int64      `json:"delivered"`
	Waiting    int64      `json:"waiting"`
	Dead       int64      `json:"dead"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// replayJob loads a bulk replay and its progress.
func (s *Server) replayJob(ctx context.Context, id int64) (replayJobView, error) {
	j, err := s.q.ReplayJobGet(ctx, id)
	if err != nil {
		return replayJobView{}, missing(err, "replay")
	}
	p, err := s.q.ReplayProgress(ctx, db.ReplayProgressParams{ReplayedAt: &j.Stamp})
	if err != nil {
		return replayJobView{}, fmt.Errorf("replay %d progress: %w", id, err)
	}
	return replayJobView{
		ID: j.ID, State: j.State, Total: j.Total, Replayed: j.Replayed,
		Filter:    bulkReplay{Status: j.Status, EndpointID: j.EndpointID, EventType: j.EventType, Q: j.Q, Since: j.Since, Until: j.Until},
		Delivered: p.Delivered, Waiting: p.Waiting, Dead: p.Dead,
		CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt, FinishedAt: j.FinishedAt,
	}, nil
}

// cancelReplayJob stops a running bulk replay (what it re-queued stays
// queued) and audits it; a replay that is not running is a 409.
func (s *Server) cancelReplayJob(ctx context.Context, id int64, actor string) error {
	if _, err := s.q.ReplayJobGet(ctx, id); db.NoRows(err) {
		return notFound("replay")
	} else if err != nil {
		return fmt.Errorf("load replay %d: %w", id, err)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.ReplayJobCancel(ctx, id); db.NoRows(err) {
			return conflict("state", "the replay is not running")
		} else if err != nil {
			return fmt.Errorf("cancel replay %d: %w", id, err)
		}
		return audit(ctx, q, actor, "deliveries.replay_cancel", "replay_job", id, nil)
	})
}
