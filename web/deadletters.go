package web

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
)

// cluster is a group of dead letters sharing endpoint, error class and
// status code, with the article's diagnosis.
type cluster struct {
	Key            string    `json:"key"` // "<endpoint_id>:<error_class>:<status_code>", the replay selector
	EndpointID     int64     `json:"endpoint_id"`
	EndpointName   string    `json:"endpoint_name"`
	PartnerName    string    `json:"partner_name"`
	EndpointOn     bool      `json:"endpoint_enabled"`
	ErrorClass     string    `json:"error_class"`
	StatusCode     int32     `json:"status_code"`
	Count          int64     `json:"count"`
	FirstDeadAt    time.Time `json:"first_dead_at"`
	LastDeadAt     time.Time `json:"last_dead_at"`
	AvgAttempts    float64   `json:"avg_attempts"`
	PrimaryError   string    `json:"primary_error"`
	PayoutAtRisk   float64   `json:"payout_at_risk"`
	HoursWithDead  int64     `json:"hours_with_dead"`
	MaxInOneHour   int64     `json:"max_in_one_hour"`
	Diagnosis      diagnosis `json:"diagnosis"`
	disabledReason string
	// maxAttempts is the endpoint's: 1 means no retries at all.
	maxAttempts int32
	// payoutCurrencies are the distinct currencies of the events summed in
	// PayoutAtRisk; payoutUnlabelled, that some of them named none.
	payoutCurrencies []string
	payoutUnlabelled bool
}

// clusterKey is the selector a cluster is replayed by.
type clusterKey struct {
	EndpointID int64
	ErrorClass string
	StatusCode int32
}

func (k clusterKey) String() string {
	return fmt.Sprintf("%d:%s:%d", k.EndpointID, k.ErrorClass, k.StatusCode)
}

func parseClusterKey(s string) (clusterKey, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return clusterKey{}, false
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	code, err2 := strconv.ParseInt(parts[2], 10, 32)
	if err1 != nil || err2 != nil || id <= 0 || code < 0 {
		return clusterKey{}, false
	}
	return clusterKey{id, parts[1], int32(code)}, true
}

// maxClusterHours bounds the clusters window (the dead letters kept).
const maxClusterHours = 24 * 90

// clusterSince is where a window of the last hours starts for the
// clusters: at the start of its first UTC hour, as the tallies count
// (migration 00027), so "the last 24 hours" holds 24 to 25 hours of dead
// letters. The page, a cluster's list and count, and a cluster replay all
// start there, so a replay takes exactly the dead letters counted.
func clusterSince(now time.Time, hours int) time.Time {
	return now.Add(-time.Duration(hours) * time.Hour).Truncate(time.Hour)
}

func (s *Server) deadLetterClusters(ctx context.Context, hours int) ([]cluster, error) {
	rows, err := s.q.DeadLetterClusters(ctx, clusterSince(s.now(), hours))
	if err != nil {
		return nil, err
	}
	out := make([]cluster, 0, len(rows))
	for _, r := range rows {
		c := cluster{
			Key:        clusterKey{r.EndpointID, r.ErrorClass, r.StatusCode}.String(),
			EndpointID: r.EndpointID, EndpointName: r.EndpointName, PartnerName: r.PartnerName,
			EndpointOn: r.Enabled, ErrorClass: r.ErrorClass, StatusCode: r.StatusCode,
			Count: r.DeadCount, FirstDeadAt: r.FirstDeadAt, LastDeadAt: r.LastDeadAt,
			AvgAttempts: r.AvgAttempts, PrimaryError: r.PrimaryError, PayoutAtRisk: r.PayoutAtRisk,
			HoursWithDead: r.HoursWithDead, MaxInOneHour: r.MaxInOneHour, disabledReason: r.DisabledReason,
			maxAttempts: r.MaxAttempts, payoutCurrencies: r.PayoutCurrencies, payoutUnlabelled: r.PayoutUnlabelled,
		}
		c.Diagnosis = diagnose(c, hours)
		out = append(out, c)
	}
	return out, nil
}

// replaySelector chooses dead letters to replay: exactly one of the forms.
type replaySelector struct {
	DeliveryIDs []int64    `json:"delivery_ids,omitempty"`
	Cluster     string     `json:"cluster,omitempty"`
	EndpointID  int64      `json:"endpoint_id,omitempty"`
	Since       *time.Time `json:"since,omitempty"`
	Hours       int        `json:"hours,omitempty"` // cluster window (default 24)
}

func (sel replaySelector) validate() error {
	forms := 0
	if len(sel.DeliveryIDs) > 0 {
		forms++
		if len(sel.DeliveryIDs) > 10000 {
			return invalidField("delivery_ids", "at most 10000 ids per request")
		}
	}
	if sel.Cluster != "" {
		forms++
		if _, ok := parseClusterKey(sel.Cluster); !ok {
			return invalidField("cluster", `must be a cluster key "<endpoint_id>:<error_class>:<status_code>" from GET /api/v1/dead-letters/clusters`)
		}
	}
	if sel.EndpointID != 0 {
		forms++
		if sel.EndpointID < 0 {
			return invalidField("endpoint_id", "must be a positive integer")
		}
	}
	if sel.Since != nil && sel.EndpointID == 0 && sel.Cluster == "" {
		return invalidField("since", "goes with endpoint_id or cluster")
	}
	if sel.Hours < 0 || sel.Hours > maxClusterHours {
		return invalidField("hours", fmt.Sprintf("must be between 1 and %d", maxClusterHours))
	}
	switch forms {
	case 0:
		return invalidField("delivery_ids", "say what to replay: delivery_ids, cluster, or endpoint_id (optionally with since)")
	case 1:
		return nil
	}
	return invalidField("cluster", "give only one of delivery_ids, cluster and endpoint_id")
}

// replayResult says what a replay re-queued; At (the replay's timestamp,
// shared by every row) lets the dashboard follow its progress.
type replayResult struct {
	IDs []int64
	At  time.Time
}

// replay makes the selected dead letters pending again, audited, and wakes
// the workers.
func (s *Server) replay(ctx context.Context, sel replaySelector, actor string) (replayResult, error) {
	var res replayResult
	if err := sel.validate(); err != nil {
		return res, err
	}
	since := time.Time{}
	if sel.Since != nil {
		since = *sel.Since
	} else if sel.Cluster != "" {
		hours := sel.Hours
		if hours == 0 {
			hours = 24
		}
		since = clusterSince(s.now(), hours)
	}
	add := func(id int64, at *time.Time) {
		res.IDs = append(res.IDs, id)
		if at != nil {
			res.At = *at
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		details := map[string]any{}
		p := db.DeadLetterReplayParams{Now: s.dbNow()}
		switch {
		case len(sel.DeliveryIDs) > 0:
			p.Ids = sel.DeliveryIDs
			details["delivery_ids"] = len(sel.DeliveryIDs)
		case sel.Cluster != "":
			k, _ := parseClusterKey(sel.Cluster)
			p.EndpointID, p.ErrorClass, p.StatusCode, p.Since = &k.EndpointID, &k.ErrorClass, &k.StatusCode, &since
			details["cluster"] = sel.Cluster
		default:
			if _, err := q.EndpointGet(ctx, sel.EndpointID); err != nil {
				if db.NoRows(err) {
					return invalidField("endpoint_id", "no endpoint with this id")
				}
				return err
			}
			p.EndpointID = &sel.EndpointID
			if !since.IsZero() {
				p.Since = &since
			}
			details["endpoint_id"] = sel.EndpointID
		}
		rows, err := q.DeadLetterReplay(ctx, p)
		if err != nil {
			return fmt.Errorf("replay dead letters: %w", err)
		}
		for _, r := range rows {
			add(r.ID, r.ReplayedAt)
		}
		if !since.IsZero() {
			details["since"] = since.UTC().Format(time.RFC3339)
		}
		details["replayed"] = len(res.IDs)
		if err := audit(ctx, q, actor, "dead_letters.replay", "deliveries", 0, details); err != nil {
			return err
		}
		if len(res.IDs) > 0 {
			return q.EventNotify(ctx, db.NotifyQueueLimit)
		}
		return nil
	})
	if err != nil {
		return replayResult{}, err
	}
	return res, nil
}
