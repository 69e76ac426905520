package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/budget"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/sender"
)

// budgetState is one endpoint's failure budget while a batch is applied
// (part of healthState: the streak is kept on the health row, under its
// lock).
type budgetState struct {
	budget       budget.Budget
	streak       budget.Streak
	loadedStreak budget.Streak
	enabled      bool
	loadedState  breaker.State
	warns        []warning // warnings to send, in order
	disable      bool      // the budget is spent
	lastFailedAt time.Time
}

// warning is one warning level crossed by a failed delivery.
type warning struct {
	level, failures int
	at              time.Time
}

func newBudgetState(r db.EndpointHealthLockRow) budgetState {
	b, err := budget.New(int(r.DisableAfterFailures), int(r.DisableAfterHours))
	if err != nil { // the database checks the same bounds
		b = budget.Budget{}
	}
	s := budgetState{budget: b, enabled: r.Enabled, loadedState: breaker.State(r.State),
		streak: budget.Streak{Failures: int(r.FailedDeliveries), Warned: int(r.BudgetWarned)}}
	if r.FirstFailedAt != nil {
		s.streak.FirstAt = *r.FirstFailedAt
	}
	s.loadedStreak = s.streak
	return s
}

// applyBudget folds one outcome into the streak: a success ends it, a
// delivery that died counts one failure (a retry scheduled counts nothing:
// deliveries fail, not attempts).
func (s *budgetState) applyBudget(o *outcome) {
	switch {
	case o.res.Outcome == sender.OK:
		s.streak = s.budget.Succeed(s.streak)
		s.warns, s.disable = nil, false
	case o.dead:
		v := s.budget.Fail(s.streak, o.finished)
		s.streak = v.Streak
		s.lastFailedAt = o.finished
		if v.Warn > 0 {
			s.warns = append(s.warns, warning{level: v.Warn, failures: v.Streak.Failures, at: o.finished})
		}
		if v.Disable {
			s.disable = true
		}
	}
}

// writeBudgets stores the streaks that changed, disables the endpoints
// whose budget is spent, and writes the notifications the batch caused:
// warnings, disables, and breakers that opened or closed.
func writeBudgets(ctx context.Context, q *db.Queries, states map[int64]*healthState, dbNow *time.Time, notes *notices) error {
	ids := make([]int64, 0, len(states))
	for id := range states {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var p db.EndpointHealthBudgetWriteParams
	for _, id := range ids {
		s := states[id]
		switch {
		case s.loadedState == breaker.Closed && s.h.State == breaker.Open:
			notes.add(notify.BreakerOpened, id, "", map[string]any{
				"consecutive_failures": s.h.ConsecutiveFailures, "threshold": s.threshold,
				"cooldown": s.h.Cooldown.String()})
		case s.loadedState != breaker.Closed && s.h.State == breaker.Closed && !s.h.Paused:
			notes.add(notify.BreakerClosed, id, "", nil)
		}
		if s.streak != s.loadedStreak {
			p.EndpointIds = append(p.EndpointIds, id)
			p.FailedDeliveries = append(p.FailedDeliveries, int32(min(s.streak.Failures, 1<<31-1)))
			p.FirstFailedAts = append(p.FirstFailedAts, s.streak.FirstAt)
			p.BudgetWarned = append(p.BudgetWarned, int32(s.streak.Warned))
		}
		if !s.enabled {
			continue // already disabled: its held results change nothing more
		}
		span := budget.Span(s.lastFailedAt.Sub(s.streak.FirstAt))
		figures := map[string]any{"failures": s.streak.Failures, "budget": s.budget.Failures,
			"disable_after_hours": int(s.budget.Span / time.Hour), "span": span}
		// Warnings go out even when the same batch spends the budget: each
		// level is news once per streak.
		for _, w := range s.warns {
			notes.add(notify.EndpointWarned, id, fmt.Sprint(w.level), map[string]any{"failures": w.failures,
				"budget": s.budget.Failures, "disable_after_hours": int(s.budget.Span / time.Hour),
				"span": budget.Span(w.at.Sub(s.streak.FirstAt))})
		}
		if s.disable {
			reason := fmt.Sprintf("failure budget spent: %d failed deliveries in a row over %s (limit %d in at least %d h); deliveries are kept queued until it is re-enabled",
				s.streak.Failures, span, s.budget.Failures, int(s.budget.Span/time.Hour))
			n, err := q.EndpointDisable(ctx, db.EndpointDisableParams{ID: id, Reason: reason, Cause: "failure_budget", Now: dbNow})
			if err != nil {
				return fmt.Errorf("disable endpoint over its failure budget: %w", err)
			}
			if n > 0 {
				notes.add(notify.EndpointDisabled, id, "failure_budget", figures)
			}
		}
	}
	if len(p.EndpointIds) == 0 {
		return nil
	}
	if err := q.EndpointHealthBudgetWrite(ctx, p); err != nil {
		return fmt.Errorf("write failure budgets: %w", err)
	}
	return nil
}

// notices collects the outbox rows of one transaction.
type notices struct {
	kinds     []string
	endpoints []int64
	subjects  []string
	figures   [][]byte
}

func (n *notices) add(k notify.Kind, endpointID int64, subject string, figures map[string]any) {
	b, err := json.Marshal(figures)
	if err != nil || figures == nil {
		b = []byte("{}")
	}
	n.kinds = append(n.kinds, string(k))
	n.endpoints = append(n.endpoints, endpointID)
	n.subjects = append(n.subjects, subject)
	n.figures = append(n.figures, b)
}

// insert writes the collected rows, in the caller's transaction.
func (n *notices) insert(ctx context.Context, q *db.Queries, dbNow *time.Time) error {
	if len(n.kinds) == 0 {
		return nil
	}
	figs := make([]json.RawMessage, len(n.figures))
	for i, f := range n.figures {
		figs[i] = f
	}
	if err := q.NotificationInsertBatch(ctx, db.NotificationInsertBatchParams{
		Kinds: n.kinds, EndpointIds: n.endpoints, Subjects: n.subjects, Figures: figs, Now: dbNow,
	}); err != nil {
		return fmt.Errorf("queue notifications: %w", err)
	}
	return nil
}
