package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/notify"
)

// notifyEvery is the dispatcher's backstop period; a completion batch that
// queued notifications wakes it at once.
const notifyEvery = time.Second

// notifierConfig configures a notifier; validate says what is missing.
type notifierConfig struct {
	Pool *pgxpool.Pool
	// Outbox wakes the notifier when a completion (or its own watch)
	// queued operator notifications: a 1-buffered channel the completer
	// signals.
	Outbox chan struct{}
	// WakeClaims tells the claim loop that notifications were queued as
	// deliveries.
	WakeClaims func()
	// PublicURL is the dashboard's base URL, linked from notifications
	// (none when empty).
	PublicURL string
	// HeldOpenAfter is how long a breaker stays open before a
	// breaker.held_open notification (notify.HeldOpenAfter when not
	// positive).
	HeldOpenAfter time.Duration
	Logger        *slog.Logger
	Now           func() time.Time
	// DBNow is the "now" passed to SQL (nil: the database's clock; see
	// Worker.dbNow).
	DBNow func() *time.Time
}

func (c notifierConfig) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("notifier: Pool is required")
	case c.Outbox == nil:
		return errors.New("notifier: Outbox is required")
	case c.WakeClaims == nil:
		return errors.New("notifier: WakeClaims is required")
	case c.Logger == nil:
		return errors.New("notifier: Logger is required")
	case c.Now == nil, c.DBNow == nil:
		return errors.New("notifier: Now and DBNow are required")
	}
	return nil
}

// notifier turns the operator notification outbox (rows written by
// completions and by its own watch of certificates and held breakers)
// into deliveries to the notification channels' endpoints, which the
// claim loop then sends like any other.
type notifier struct {
	cfg            notifierConfig
	pool           *pgxpool.Pool
	q              *db.Queries
	log            *slog.Logger
	now            func() time.Time
	dbNow          func() *time.Time
	outbox         chan struct{}
	wakeEverywhere func()
}

func newNotifier(cfg notifierConfig) (*notifier, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &notifier{cfg: cfg, pool: cfg.Pool, q: db.New(cfg.Pool), log: cfg.Logger,
		now: cfg.Now, dbNow: cfg.DBNow, outbox: cfg.Outbox, wakeEverywhere: cfg.WakeClaims}, nil
}

// RunOnce looks for certificates and held breakers, then dispatches the
// pending notifications once, with nothing held back from an earlier pass
// (tests).
func (n *notifier) RunOnce(ctx context.Context) error {
	if err := n.watchNotices(ctx); err != nil {
		return err
	}
	return n.dispatchNotifications(ctx, nil)
}

// Run turns the notification outbox into deliveries to the channels'
// endpoints until ctx ends. It runs beside the claim loop and never
// inside it: a completion only writes outbox rows in its own
// transaction, so notifications cannot block or slow a delivery.
func (n *notifier) Run(ctx context.Context) {
	t := time.NewTicker(notifyEvery)
	defer t.Stop()
	held := map[notifyKey]time.Time{}
	var watched time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.outbox:
		}
		if time.Since(watched) >= noticeWatchEvery {
			watched = time.Now()
			if err := n.watchNotices(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("watch certificates and held breakers", "err", err)
			}
		}
		if err := n.dispatchNotifications(ctx, held); err != nil && ctx.Err() == nil {
			n.log.Warn("dispatch operator notifications", "err", err)
		}
	}
}

// notifyKey is what the rate limit counts by.
type notifyKey struct {
	kind, subject string
	endpointID    int64
}

// dispatchNotifications decides every pending outbox row once: a row about
// a channel's own endpoint is skipped (no loops), a test goes to its
// channel, the rest go through notify.Limiter per endpoint, kind and
// subject and, when sent, to every channel subscribed to the kind. One
// replica dispatches at a time (a try-lock: the others skip their turn).
// held remembers until when a key's rows wait (the rate limit's window), so
// rows held back are not looked up again every second; nil remembers
// nothing.
func (n *notifier) dispatchNotifications(ctx context.Context, held map[notifyKey]time.Time) error {
	limiter := notify.Limiter{Window: notify.Window}
	sent := 0
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		q := n.q.WithTx(tx)
		locked, err := q.NotificationDispatchLock(ctx)
		if err != nil || !locked {
			return err
		}
		rows, err := q.NotificationPending(ctx, 500)
		if err != nil || len(rows) == 0 {
			return err
		}
		channels, err := q.NotificationChannelList(ctx)
		if err != nil {
			return err
		}
		byID := make(map[int64]db.NotificationPendingRow, len(rows))
		groups := map[notifyKey][]int64{}
		var order []notifyKey
		var skipped []int64
		for _, r := range rows {
			byID[r.ID] = r
			switch {
			case r.ChannelID != nil:
				for _, c := range channels {
					if c.ID == *r.ChannelID {
						if err := n.enqueueNotification(ctx, q, c, r, 0); err != nil {
							return err
						}
						sent++
					}
				}
				if err := n.markNotifications(ctx, q, "sent", 0, r.ID); err != nil {
					return err
				}
			case r.AboutChannel:
				skipped = append(skipped, r.ID)
			default:
				k := notifyKey{kind: r.Kind, subject: r.Subject, endpointID: deref(r.EndpointID)}
				if _, ok := groups[k]; !ok {
					order = append(order, k)
				}
				groups[k] = append(groups[k], r.ID)
			}
		}
		if err := n.markNotifications(ctx, q, "skipped", 0, skipped...); err != nil {
			return err
		}
		now := n.now()
		for _, k := range order {
			if until, ok := held[k]; ok && now.Before(until) {
				continue
			}
			last, err := q.NotificationLastSent(ctx, db.NotificationLastSentParams{
				Kind: k.kind, Subject: k.subject, EndpointID: nonZero64(k.endpointID)})
			if err != nil {
				return fmt.Errorf("last notification sent: %w", err)
			}
			d := limiter.Decide(groups[k], last, now)
			if d.Send == 0 {
				if held != nil {
					held[k] = d.Wait
				}
				continue // held by the rate limit; summarised once the window has passed
			}
			delete(held, k)
			r := byID[d.Send]
			for _, c := range channels {
				if hears(c, r) {
					if err := n.enqueueNotification(ctx, q, c, r, d.Repeats); err != nil {
						return err
					}
					sent++
				}
			}
			if err := n.markNotifications(ctx, q, "sent", d.Repeats, d.Send); err != nil {
				return err
			}
			if err := n.markNotifications(ctx, q, "suppressed", 0, d.Suppress...); err != nil {
				return err
			}
		}
		if sent > 0 {
			return q.EventNotify(ctx, db.NotifyQueueLimit)
		}
		return nil
	})
	if err == nil && sent > 0 {
		n.wakeEverywhere()
	}
	return err
}

// hears reports whether a channel gets a notification: one of its kinds,
// and for a partner's contact channel only while its operator allows it and
// only about that partner's own endpoints (never an alert or another
// partner's endpoint).
func hears(c db.NotificationChannelListRow, r db.NotificationPendingRow) bool {
	if !slices.Contains(c.Kinds, r.Kind) {
		return false
	}
	if c.PartnerID == nil {
		return true
	}
	return c.PartnerEnabled && r.EndpointID != nil && r.PartnerID == *c.PartnerID
}

func (n *notifier) markNotifications(ctx context.Context, q *db.Queries, state string, repeats int, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := q.NotificationMark(ctx, db.NotificationMarkParams{State: state, Repeats: int32(repeats), Now: n.dbNow(), Ids: ids}); err != nil {
		return fmt.Errorf("mark notifications %s: %w", state, err)
	}
	return nil
}

// enqueueNotification queues one notification for one channel as an event
// and a delivery of the channel's endpoint: hookline's own engine signs,
// sends, retries and breaks it.
func (n *notifier) enqueueNotification(ctx context.Context, q *db.Queries, c db.NotificationChannelListRow, r db.NotificationPendingRow, repeats int) error {
	var figures map[string]any
	if len(r.Figures) > 0 {
		_ = json.Unmarshal(r.Figures, &figures) // written by this package; an odd row sends without figures
	}
	if len(figures) == 0 {
		figures = nil
	}
	m := notify.Message{Kind: notify.Kind(r.Kind), Subject: r.Subject, EndpointID: deref(r.EndpointID),
		Endpoint: r.EndpointName, Partner: r.PartnerName, Figures: figures, Repeats: repeats,
		OccurredAt: r.CreatedAt, DashboardURL: notify.Link(n.cfg.PublicURL, notify.Kind(r.Kind), deref(r.EndpointID))}
	if c.PartnerID != nil {
		// A partner follows the link into its portal, never the dashboard.
		m.DashboardURL = notify.PortalLink(n.cfg.PublicURL, deref(r.EndpointID))
	}
	body, err := json.Marshal(notify.Compose(c.Style, m))
	if err != nil {
		return err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	if err := q.NotificationEnqueue(ctx, db.NotificationEnqueueParams{
		EndpointID: c.EndpointID, EventID: id, Type: "hookline/" + r.Kind, Payload: body,
	}); err != nil {
		return fmt.Errorf("queue notification for channel %d: %w", c.ID, err)
	}
	return nil
}

func nonZero64(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}
