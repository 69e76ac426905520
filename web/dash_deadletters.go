package web

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/deadletters"
	"github.com/hookline/hookline/views/events"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
)

// deadLettersPage: GET /dead-letters[?hours=24&endpoint=ID]
func (s *Server) deadLettersPage(c echo.Context) error {
	hours, err := hoursParam(c, 24)
	if err != nil {
		hours = 24
	}
	var only int64
	if v := c.QueryParam("endpoint"); v != "" {
		only, _ = strconv.ParseInt(v, 10, 64)
	}
	clusters, err := s.deadLetterClusters(c.Request().Context(), hours)
	if err != nil {
		return err
	}
	p := deadletters.PageData{Hours: hours, Since: clusterSince(s.now(), hours), EndpointID: only, Now: s.now(), CanOperate: principalOf(c).can(account.RoleOperator), CSRF: principalOf(c).CSRF}
	seen := map[int64]bool{}
	for _, cl := range clusters {
		if only != 0 && cl.EndpointID != only {
			continue
		}
		p.Clusters = append(p.Clusters, deadletters.Cluster{
			Key: cl.Key, EndpointID: cl.EndpointID, Endpoint: cl.EndpointName, Partner: cl.PartnerName, Enabled: cl.EndpointOn,
			Class: cl.ErrorClass, StatusCode: cl.StatusCode, Count: cl.Count, First: cl.FirstDeadAt, Last: cl.LastDeadAt,
			AvgAttempts: cl.AvgAttempts, PrimaryError: cl.PrimaryError, PayoutAtRisk: cl.PayoutAtRisk,
			PayoutCurrencies: cl.payoutCurrencies, PayoutUnlabelled: cl.payoutUnlabelled,
			Pattern: cl.Diagnosis.Pattern, Summary: cl.Diagnosis.Summary, Action: cl.Diagnosis.Action,
			EventsURL: events.Filter{EndpointID: cl.EndpointID, Status: "dead"}.URL(),
		})
		if !seen[cl.EndpointID] {
			seen[cl.EndpointID] = true
			p.Endpoints = append(p.Endpoints, deadletters.Option{ID: cl.EndpointID, Name: cl.PartnerName + " · " + cl.EndpointName})
		}
	}
	sort.Slice(p.Endpoints, func(i, j int) bool { return p.Endpoints[i].Name < p.Endpoints[j].Name })
	return s.render(c, http.StatusOK, deadletters.Page(s.meta(c, "Dead letters", layout.NavDeadLetters), p))
}

// deadLetterCluster: GET /dead-letters/cluster?key=&hours= (expand a cluster)
func (s *Server) deadLetterCluster(c echo.Context) error {
	k, ok := parseClusterKey(c.QueryParam("key"))
	if !ok {
		return invalidField("key", "not a cluster key")
	}
	hours, err := hoursParam(c, 24)
	if err != nil {
		return err
	}
	rows, err := s.q.DeadLetterList(c.Request().Context(), db.DeadLetterListParams{
		EndpointID: k.EndpointID, ErrorClass: k.ErrorClass, StatusCode: k.StatusCode,
		Since: clusterSince(s.now(), hours), RowLimit: 100})
	if err != nil {
		return err
	}
	list := make([]deadletters.Delivery, 0, len(rows))
	for _, r := range rows {
		d := deadletters.Delivery{ID: r.ID, EventID: r.EventID.String(), EventType: r.EventType, Attempts: r.AttemptCount,
			Error: deref(r.LastError), ReplayCount: r.ReplayCount}
		if r.DeadAt != nil {
			d.DeadAt = *r.DeadAt
		}
		list = append(list, d)
	}
	p := principalOf(c)
	return s.render(c, http.StatusOK, deadletters.Deliveries(list, p.can(account.RoleOperator), p.CSRF, k.String(), hours))
}

// deadLetterCount: GET /dead-letters/count?endpoint_id=&since= (how many a
// since-replay would take, shown before confirming)
func (s *Server) deadLetterCount(c echo.Context) error {
	id, _ := strconv.ParseInt(c.QueryParam("endpoint_id"), 10, 64)
	since, err := parseLocalTime(c.QueryParam("since"))
	if err != nil || id <= 0 {
		return s.render(c, http.StatusOK, deadletters.Count(0))
	}
	n, err := s.q.DeadLetterCountSince(c.Request().Context(), db.DeadLetterCountSinceParams{EndpointID: id, Since: since})
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, deadletters.Count(n))
}

// deadLetterReplay: POST /dead-letters/replay (operator). The form sends one
// of cluster, endpoint_id [+ since], delivery_id. The answer is the replay's
// progress, which then follows itself until nothing is waiting.
func (s *Server) deadLetterReplay(c echo.Context) error {
	var sel replaySelector
	switch {
	case c.FormValue("cluster") != "":
		sel.Cluster = c.FormValue("cluster")
		sel.Hours, _ = strconv.Atoi(c.FormValue("hours"))
	case c.FormValue("delivery_id") != "":
		id, err := strconv.ParseInt(c.FormValue("delivery_id"), 10, 64)
		if err != nil {
			return invalidField("delivery_id", "not a delivery id")
		}
		sel.DeliveryIDs = []int64{id}
	case c.FormValue("endpoint_id") != "":
		id, err := strconv.ParseInt(c.FormValue("endpoint_id"), 10, 64)
		if err != nil {
			return invalidField("endpoint_id", "not an endpoint id")
		}
		sel.EndpointID = id
		if v := c.FormValue("since"); v != "" {
			t, err := parseLocalTime(v)
			if err != nil {
				return invalidField("since", "not a date and time")
			}
			sel.Since = &t
		}
	}
	res, err := s.replay(c.Request().Context(), sel, principalOf(c).actor())
	if err != nil {
		return err
	}
	if !isHTMX(c) {
		s.addFlash(c, layout.FlashSuccess, strconv.Itoa(len(res.IDs))+" dead deliveries re-queued.")
		return c.Redirect(http.StatusSeeOther, "/dead-letters")
	}
	var endpointID int64
	switch {
	case sel.EndpointID != 0:
		endpointID = sel.EndpointID
	case sel.Cluster != "":
		k, _ := parseClusterKey(sel.Cluster)
		endpointID = k.EndpointID
	default:
		if len(res.IDs) > 0 {
			d, err := s.q.DeliveryGet(c.Request().Context(), res.IDs[0])
			if err != nil {
				return err
			}
			endpointID = d.EndpointID
		}
	}
	p := deadletters.Progress{EndpointID: endpointID, At: res.At, Requeued: int64(len(res.IDs)), Waiting: int64(len(res.IDs))}
	// A delivery replayed from an expanded cluster keeps that cluster's
	// row count current, as a whole-cluster replay does.
	cluster := sel.Cluster
	if cluster == "" && len(sel.DeliveryIDs) > 0 {
		if k, ok := parseClusterKey(c.FormValue("in_cluster")); ok && k.EndpointID == endpointID {
			cluster = k.String()
			sel.Hours, _ = strconv.Atoi(c.FormValue("hours"))
		}
	}
	if cluster != "" {
		if err := s.withClusterCount(c.Request().Context(), &p, cluster, sel.Hours); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, deadletters.ProgressView(p))
}

// replayProgress: GET /dead-letters/progress?endpoint=&at=&requeued=
func (s *Server) replayProgress(c echo.Context) error {
	id, err1 := strconv.ParseInt(c.QueryParam("endpoint"), 10, 64)
	at, err2 := time.Parse(time.RFC3339Nano, c.QueryParam("at"))
	requeued, _ := strconv.ParseInt(c.QueryParam("requeued"), 10, 64)
	if err1 != nil || err2 != nil {
		return invalidField("at", "not a replay")
	}
	r, err := s.q.ReplayProgress(c.Request().Context(), db.ReplayProgressParams{ReplayedAt: &at, EndpointID: &id})
	if err != nil {
		return err
	}
	p := deadletters.Progress{EndpointID: id, At: at, Requeued: requeued, Delivered: r.Delivered, Waiting: r.Waiting, Dead: r.Dead}
	if key := c.QueryParam("cluster"); key != "" {
		hours, _ := strconv.Atoi(c.QueryParam("hours"))
		if err := s.withClusterCount(c.Request().Context(), &p, key, hours); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, deadletters.ProgressView(p))
}

// withClusterCount adds to a cluster replay's progress how many dead letters
// the cluster holds now in the page's window (hours, 24 when unset), so the
// cluster row's count follows the replay: re-queued rows leave the cluster,
// rows that die again with the same error come back.
func (s *Server) withClusterCount(ctx context.Context, p *deadletters.Progress, key string, hours int) error {
	k, ok := parseClusterKey(key)
	if !ok {
		return invalidField("cluster", "not a cluster key")
	}
	if hours < 1 || hours > maxClusterHours {
		hours = 24
	}
	n, err := s.q.DeadLetterClusterCount(ctx, db.DeadLetterClusterCountParams{
		EndpointID: k.EndpointID, ErrorClass: k.ErrorClass, StatusCode: k.StatusCode,
		Since: clusterSince(s.now(), hours)})
	if err != nil {
		return err
	}
	p.Cluster, p.Hours, p.Remaining = key, hours, n
	return nil
}
