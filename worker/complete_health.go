package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/latency"
	"github.com/hookline/hookline/worker/sender"
)

// healthState is one endpoint's breaker while a batch is applied.
type healthState struct {
	h           breaker.Health
	threshold   int
	probeID     int64
	pausedUntil *time.Time
	// loaded is the row as read: unchanged rows are not written back.
	loaded healthRow
	budgetState
}

// healthRow is what writeHealth stores for an endpoint.
type healthRow struct {
	h           breaker.Health
	probeID     int64
	pausedUntil time.Time
}

// needsWrite reports whether the row differs from what was read in
// anything but a last_success_at moved by less than successResolution.
func (s *healthState) needsWrite() bool {
	now := s.row()
	was := s.loaded
	if now.h.LastSuccessAt.Sub(was.h.LastSuccessAt) >= successResolution {
		return true
	}
	now.h.LastSuccessAt = was.h.LastSuccessAt
	return now.h.State != was.h.State || now.h.ConsecutiveFailures != was.h.ConsecutiveFailures ||
		!now.h.OpenedAt.Equal(was.h.OpenedAt) || now.h.Cooldown != was.h.Cooldown ||
		now.h.Paused != was.h.Paused || !now.h.LastFailureAt.Equal(was.h.LastFailureAt) ||
		now.probeID != was.probeID || !now.pausedUntil.Equal(was.pausedUntil)
}

// changed reports whether the batch changes anything stored on the
// health row or has anything to announce: the breaker, the failure
// budget's streak, a warning or a disable.
func (s *healthState) changed() bool {
	return s.needsWrite() || s.streak != s.loadedStreak || len(s.warns) > 0 || s.disable
}

func (s *healthState) row() healthRow {
	return healthRow{h: s.h, probeID: s.probeID, pausedUntil: deref(s.pausedUntil)}
}

func newHealthState(p breaker.Policy, r db.EndpointHealthLockRow) *healthState {
	s := &healthState{
		h:           breaker.Stored(r.State, r.ConsecutiveFailures, r.OpenedAt, r.CooldownSeconds, r.Paused),
		pausedUntil: r.PausedUntil,
	}
	if r.LastSuccessAt != nil {
		s.h.LastSuccessAt = *r.LastSuccessAt
	}
	if r.LastFailureAt != nil {
		s.h.LastFailureAt = *r.LastFailureAt
	}
	if r.ProbeDeliveryID != nil {
		s.probeID = *r.ProbeDeliveryID
	}
	s.loaded = s.row()
	s.budgetState = newBudgetState(r)
	s.threshold = p.ThresholdNow(int(r.FailureThreshold), latency.FromMs(deref(r.RecentP95Ms)), int(r.RecentSampleCount),
		latency.FromMs(deref(r.P95Ms)), int(r.SampleCount))
	return s
}

// apply folds one outcome in (the rules are breaker.Policy.Record's). The
// probe is over once its own result is in, or once a success closed the
// breaker.
func (s *healthState) apply(p breaker.Policy, o *outcome) {
	ok := o.res.Outcome == sender.OK
	isProbe := s.probeID != 0 && o.d.ID == s.probeID
	s.h = p.Record(s.h, s.threshold, ok, isProbe, o.finished)
	if isProbe || (ok && s.h.State == breaker.Closed) {
		s.probeID = 0
	}
}

func writeHealth(ctx context.Context, q *db.Queries, states map[int64]*healthState, dbNow *time.Time) error {
	var p db.EndpointHealthWriteParams
	p.Now = dbNow
	ids := make([]int64, 0, len(states))
	for id, s := range states {
		if s.needsWrite() {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := states[id]
		p.EndpointIds = append(p.EndpointIds, id)
		p.States = append(p.States, string(s.h.State))
		p.ConsecutiveFailures = append(p.ConsecutiveFailures, int32(min(s.h.ConsecutiveFailures, 1<<31-1)))
		p.OpenedAts = append(p.OpenedAts, s.h.OpenedAt)
		p.CooldownSeconds = append(p.CooldownSeconds, int32(max(s.h.Cooldown/time.Second, 1)))
		p.ProbeDeliveryIds = append(p.ProbeDeliveryIds, s.probeID)
		p.PausedUntils = append(p.PausedUntils, deref(s.pausedUntil))
		p.LastSuccessAts = append(p.LastSuccessAts, s.h.LastSuccessAt)
		p.LastFailureAts = append(p.LastFailureAts, s.h.LastFailureAt)
	}
	if err := q.EndpointHealthWrite(ctx, p); err != nil {
		return fmt.Errorf("write endpoint health: %w", err)
	}
	return nil
}
