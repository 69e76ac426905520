package web

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/worker/budget"
	"github.com/hookline/hookline/worker/notify"
)

// failureBudgetFields are the failure-budget fields of an endpoint as the
// API shows them.
type failureBudgetFields struct {
	DisableAfterFailures int32      `json:"disable_after_failures"`
	DisableAfterHours    int32      `json:"disable_after_hours"`
	DisabledCause        string     `json:"disabled_cause"` // "", operator, gone or failure_budget
	DisabledAt           *time.Time `json:"disabled_at"`
	// FailureBudget is the current streak (list and single reads only).
	FailureBudget *failureBudgetJSON `json:"failure_budget,omitempty"`
}

// failureBudgetJSON is where an endpoint stands against its budget.
type failureBudgetJSON struct {
	FailedDeliveries int        `json:"failed_deliveries"`
	FirstFailedAt    *time.Time `json:"first_failed_at"`
	Percent          int        `json:"percent"`
	// Progress reads "7 of 10 failures in 41 h"; empty with no failures.
	Progress string `json:"progress"`
}

func budgetFields(e db.Endpoint) failureBudgetFields {
	return failureBudgetFields{DisableAfterFailures: e.DisableAfterFailures, DisableAfterHours: e.DisableAfterHours,
		DisabledCause: e.DisabledCause, DisabledAt: e.DisabledAt}
}

// budgetOf is an endpoint's budget and streak.
func budgetOf(e db.Endpoint, h db.EndpointHealth) (budget.Budget, budget.Streak) {
	b, err := budget.New(int(e.DisableAfterFailures), int(e.DisableAfterHours))
	if err != nil {
		b = budget.Budget{}
	}
	st := budget.Streak{Failures: int(h.FailedDeliveries), Warned: int(h.BudgetWarned)}
	if h.FirstFailedAt != nil {
		st.FirstAt = *h.FirstFailedAt
	}
	return b, st
}

// budgetData is the failure budget as the dashboard shows it.
func budgetData(e db.Endpoint, h db.EndpointHealth, now time.Time) components.BudgetData {
	b, st := budgetOf(e, h)
	cause := e.DisabledCause
	if e.Enabled {
		cause = ""
	}
	return components.BudgetData{Progress: b.Progress(st, now), Percent: b.Percent(st), Cause: cause}
}

func budgetProgress(e db.Endpoint, h db.EndpointHealth, now time.Time) *failureBudgetJSON {
	b, st := budgetOf(e, h)
	return &failureBudgetJSON{FailedDeliveries: st.Failures, FirstFailedAt: h.FirstFailedAt,
		Percent: b.Percent(st), Progress: b.Progress(st, now)}
}

// saveFailureBudget writes an endpoint's failure budget after its create
// or update (cur is nil on create), in the same transaction, and handles
// the enabled flag changing: an operator's disable is recorded as such;
// enabling again starts the budget afresh, wakes the workers for the
// deliveries held meanwhile, and notifies the operators.
func (s *Server) saveFailureBudget(ctx context.Context, q *db.Queries, cur *db.Endpoint, e db.Endpoint, cfg endpointConfig) (db.Endpoint, error) {
	e, err := q.EndpointSetFailureBudget(ctx, db.EndpointSetFailureBudgetParams{ID: e.ID,
		DisableAfterFailures: cfg.DisableAfterFailures, DisableAfterHours: cfg.DisableAfterHours, Cause: "operator"})
	if err != nil {
		return db.Endpoint{}, fmt.Errorf("save failure budget: %w", err)
	}
	if cur == nil || cur.Enabled == e.Enabled {
		return e, nil
	}
	if !e.Enabled {
		return e, queueNotification(ctx, q, notify.EndpointDisabled, e.ID, "operator",
			map[string]any{"reason": e.DisabledReason})
	}
	if err := q.EndpointHealthBudgetReset(ctx, e.ID); err != nil {
		return db.Endpoint{}, fmt.Errorf("reset failure budget: %w", err)
	}
	depth, err := q.EndpointQueueDepth(ctx, e.ID)
	if err != nil {
		return db.Endpoint{}, fmt.Errorf("queue depth: %w", err)
	}
	figures := map[string]any{"queued": depth.Queued}
	if cur.DisabledCause != "" {
		figures["was_disabled_by"] = cur.DisabledCause
	}
	if err := queueNotification(ctx, q, notify.EndpointEnabled, e.ID, "", figures); err != nil {
		return db.Endpoint{}, err
	}
	return e, q.EventNotify(ctx, db.NotifyQueueLimit)
}

// queueNotification writes one outbox row in the caller's transaction.
func queueNotification(ctx context.Context, q *db.Queries, k notify.Kind, endpointID int64, subject string, figures map[string]any) error {
	if figures == nil {
		figures = map[string]any{}
	}
	b, err := json.Marshal(figures)
	if err != nil {
		return err
	}
	if err := q.NotificationInsertBatch(ctx, db.NotificationInsertBatchParams{
		Kinds: []string{string(k)}, EndpointIds: []int64{endpointID}, Subjects: []string{subject},
		Figures: []json.RawMessage{b},
	}); err != nil {
		return fmt.Errorf("queue notification: %w", err)
	}
	return nil
}
