package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/notify"
)

// noticeWatchEvery is how often the worker looks for what no completion
// announces: certificates nearing expiry and breakers held open.
const noticeWatchEvery = time.Minute

// certHorizons are the expiry warnings, nearest first: a certificate that
// is already inside 7 days when first seen gets only the 7-day warning.
var certHorizons = []int32{7, 30}

// watchNotices writes outbox rows for client certificates expiring within
// 30 and 7 days (once per certificate and horizon, recorded on the
// endpoint's egress row in the same transaction) and for breakers open
// longer than Config.HeldOpenAfter (once per opening: the row itself is
// the record). The dispatcher sends them like any other. One replica
// looks at a time (the dispatcher's try-lock).
func (n *notifier) watchNotices(ctx context.Context) error {
	now := n.now()
	heldAfter := n.cfg.HeldOpenAfter
	if heldAfter <= 0 {
		heldAfter = notify.HeldOpenAfter
	}
	wrote := false
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		q := n.q.WithTx(tx)
		locked, err := q.NotificationDispatchLock(ctx)
		if err != nil || !locked {
			return err
		}
		var p db.NotificationInsertBatchParams
		add := func(k notify.Kind, endpointID int64, subject string, figures map[string]any) error {
			b, err := json.Marshal(figures)
			if err != nil {
				return err
			}
			p.Kinds = append(p.Kinds, string(k))
			p.EndpointIds = append(p.EndpointIds, endpointID)
			p.Subjects = append(p.Subjects, subject)
			p.Figures = append(p.Figures, b)
			return nil
		}
		for _, days := range certHorizons {
			rows, err := q.EndpointEgressCertsExpiring(ctx, db.EndpointEgressCertsExpiringParams{Now: &now, Days: days})
			if err != nil {
				return fmt.Errorf("certificates expiring within %d days: %w", days, err)
			}
			for _, r := range rows {
				exp := deref(r.ClientCertExpiresAt)
				left := int(math.Ceil(exp.Sub(now).Hours() / 24))
				if err := add(notify.CertificateExpiring, r.EndpointID, strconv.Itoa(int(days)), map[string]any{
					"certificate": r.ClientCertSubject, "expires_at": exp.UTC().Format(time.RFC3339), "days_left": max(left, 0),
				}); err != nil {
					return err
				}
				if err := q.EndpointEgressCertWarned(ctx, db.EndpointEgressCertWarnedParams{Days: days, EndpointID: r.EndpointID}); err != nil {
					return fmt.Errorf("record certificate warning: %w", err)
				}
			}
		}
		held, err := q.NotificationBreakersHeldOpen(ctx, now.Add(-heldAfter))
		if err != nil {
			return fmt.Errorf("breakers held open: %w", err)
		}
		for _, r := range held {
			if err := add(notify.BreakerHeldOpen, r.EndpointID, "", map[string]any{
				"open_since": r.OpenedAt.UTC().Format(time.RFC3339), "open_for": now.Sub(r.OpenedAt).Round(time.Minute).String(),
			}); err != nil {
				return err
			}
		}
		if len(p.Kinds) == 0 {
			return nil
		}
		p.Now = n.dbNow()
		wrote = true
		return q.NotificationInsertBatch(ctx, p)
	})
	if err == nil && wrote {
		signal(n.outbox)
	}
	return err
}
