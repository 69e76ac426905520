package web

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/notify"
)

// The alert watcher's period, how far back a new dead-letter cluster is
// looked for, and how long one is not announced again.
const (
	alertWatchEvery   = 30 * time.Second
	newClusterWindow  = 1
	clusterQuietAfter = 24 * time.Hour
	// clusterKeysOverlap is how far before its previous run the watch looks
	// for dead letters of unannounced clusters: a dead letter's dead_at is
	// set before its transaction commits, and the replicas' clocks differ.
	clusterKeysOverlap = time.Minute
	// notificationRetention is how long decided outbox rows are kept.
	notificationRetention = 30 * 24 * time.Hour
)

// WatchAlerts turns the pipeline's alerts (the same ones the overview and
// GET /api/v1/stats show) firing or resolving, and new dead-letter
// clusters, into operator notifications, every 30 s until ctx ends. It only
// writes outbox rows; the worker's dispatcher sends them. Several replicas
// may run it: one at a time does the work (a try-lock).
func (s *Server) WatchAlerts(ctx context.Context) {
	t := time.NewTicker(alertWatchEvery)
	defer t.Stop()
	for {
		if err := s.watchAlertsOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("watch pipeline alerts", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// alertKinds are the pipeline alerts a channel can hear about.
var alertKinds = []string{"dead_letters_rising", "oldest_pending", "slow_endpoints"}

// watchAlertsOnce is one look of the watch. A cluster can be new only if
// it has a dead letter since this replica's previous look that held the
// lock (less clusterKeysOverlap; at most newClusterWindow back), so the
// watch reads the clusters' figures only when one of those is
// unannounced.
func (s *Server) watchAlertsOnce(ctx context.Context) error {
	st, err := s.pipelineStats(ctx)
	if err != nil {
		return fmt.Errorf("pipeline stats: %w", err)
	}
	now := s.now()
	since := now.Add(-newClusterWindow * time.Hour)
	if last := s.watchedAt.Load(); last != 0 {
		if t := time.Unix(0, last).Add(-clusterKeysOverlap); t.After(since) {
			since = t
		}
	}
	acted := false
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		locked, err := q.NotificationWatchLock(ctx)
		if err != nil || !locked {
			return err
		}
		states, err := q.NotificationAlertStates(ctx)
		if err != nil {
			return err
		}
		fired := map[string]bool{}
		for _, r := range states {
			fired[r.Subject] = r.Kind == string(notify.AlertFired)
		}
		firing := map[string]alert{}
		for _, a := range st.Alerts {
			firing[a.Kind] = a
		}
		for _, k := range alertKinds {
			a, on := firing[k]
			switch {
			case on && !fired[k]:
				err = queueNotification(ctx, q, notify.AlertFired, 0, k, map[string]any{
					"severity": a.Severity, "details": a.Message, "endpoints": len(a.Endpoints)})
			case !on && fired[k]:
				err = queueNotification(ctx, q, notify.AlertResolved, 0, k, nil)
			}
			if err != nil {
				return err
			}
		}
		announced, err := q.NotificationRecentSubjects(ctx, db.NotificationRecentSubjectsParams{
			Kind: string(notify.DeadLetterNew), Since: now.Add(-clusterQuietAfter)})
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, k := range announced {
			seen[k] = true
		}
		keys, err := q.DeadLetterClusterKeys(ctx, since)
		if err != nil {
			return err
		}
		var clusters []cluster
		if slices.ContainsFunc(keys, func(k db.DeadLetterClusterKeysRow) bool {
			return !seen[clusterKey{k.EndpointID, k.ErrorClass, k.StatusCode}.String()]
		}) {
			if clusters, err = s.deadLetterClusters(ctx, newClusterWindow); err != nil {
				return fmt.Errorf("dead-letter clusters: %w", err)
			}
		}
		for _, c := range clusters {
			if seen[c.Key] {
				continue
			}
			figures := map[string]any{"dead": c.Count, "error_class": c.ErrorClass, "diagnosis": c.Diagnosis.Summary}
			if c.StatusCode != 0 {
				figures["status_code"] = c.StatusCode
			}
			if err := queueNotification(ctx, q, notify.DeadLetterNew, c.EndpointID, c.Key, figures); err != nil {
				return err
			}
		}
		_, err = q.NotificationPrune(ctx, now.Add(-notificationRetention))
		acted = err == nil
		return err
	})
	if err == nil && acted {
		s.watchedAt.Store(now.UnixNano())
	}
	return err
}
