package web

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/portal"
)

// portalMeta is the portal shell's view model for the request's partner.
func (s *Server) portalMeta(c echo.Context, title, nav string) portal.Meta {
	m := portal.Meta{Product: s.portalTitle(), Title: title, Nav: nav, Version: s.cfg.Version, Flashes: s.takeFlashes(c)}
	if p := portalOf(c); p != nil {
		m.Partner, m.CSRF, m.CanManage = p.PartnerName, p.CSRF, p.ManageEndpoints
	}
	return m
}

// renderPortalError answers a portal request's error inside the portal
// shell (never the dashboard's, whose links lead to the operator login).
func (s *Server) renderPortalError(c echo.Context, ae *apiError) {
	m := s.portalMeta(c, "", "")
	m.Title = http.StatusText(ae.Status)
	msg := ae.Message
	if ae.Status >= 500 || msg == "" {
		msg = layout.StatusMessage(ae.Status)
	}
	if err := s.render(c, ae.Status, portal.ErrorPage(m, ae.Status, msg)); err != nil {
		_ = c.String(ae.Status, msg)
	}
}

// portalEndpoint loads one of the session partner's endpoints, or a 404
// (another partner's endpoint is not found, exactly like a missing one).
func (s *Server) portalEndpoint(c echo.Context) (db.PortalEndpointGetRow, error) {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return db.PortalEndpointGetRow{}, err
	}
	r, err := s.q.PortalEndpointGet(c.Request().Context(), db.PortalEndpointGetParams{ID: id, PartnerID: portalOf(c).PartnerID})
	if err != nil {
		return r, missing(err, "endpoint")
	}
	return r, nil
}

// portalHome: GET /portal/ — the partner's endpoints with their health.
func (s *Server) portalHome(c echo.Context) error {
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	rows, err := s.q.PortalEndpointList(ctx, pid)
	if err != nil {
		return err
	}
	counts, err := s.q.PortalEndpointCounts(ctx, db.PortalEndpointCountsParams{PartnerID: pid, CountCap: components.Counted + 1})
	if err != nil {
		return err
	}
	queue, dead := map[int64]int64{}, map[int64]int64{}
	for _, r := range counts {
		queue[r.EndpointID], dead[r.EndpointID] = r.Queued, r.Dead
	}
	now := s.now()
	h := portal.Home{Now: now}
	for _, r := range rows {
		id := r.Endpoint.ID
		unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-24*time.Hour), &id)
		if err != nil {
			return err
		}
		h.Rows = append(h.Rows, endpointRow(db.EndpointListWithHealthRow(r), queue[id], dead[id], unsent[id].Dead, now))
	}
	if err := s.withSparklinesOf(ctx, h.Rows); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.HomePage(s.portalMeta(c, "Endpoints", portal.NavEndpoints), h))
}

// portalEndpointPage: GET /portal/endpoints/:id
func (s *Server) portalEndpointPage(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e := r.Endpoint
	health, err := s.healthPanel(ctx, db.EndpointGetWithHealthRow(r), true)
	if err != nil {
		return err
	}
	chart, err := s.endpointChart(ctx, e)
	if err != nil {
		return err
	}
	secrets, err := s.portalSecrets(c, e)
	if err != nil {
		return err
	}
	dead, err := s.portalDead(c, e.ID)
	if err != nil {
		return err
	}
	v := portal.Endpoint{ID: e.ID, Name: e.Name, Kind: e.Kind, Host: endpointHost(e), URL: e.URL, Method: e.Method,
		EventTypes: e.EventTypes, Health: health, Chart: chart, Secrets: secrets, Dead: dead}
	v.Headers, _ = secretbox.HeaderNames(e.Headers)
	sort.Strings(v.Headers)
	// Which proxy, CA, certificate and credential are in use; never the
	// operator's proxy address or a credential's settings.
	if v.Egress, err = s.egressPanel(c.Request().Context(), e.ID, true, false); err != nil {
		return err
	}
	if portalOf(c).ManageEndpoints {
		m := portalManage(c, e)
		v.Manage = &m
	}
	return s.render(c, http.StatusOK, portal.EndpointPage(s.portalMeta(c, e.Name, portal.NavEndpoints), v))
}

func (s *Server) portalSecrets(c echo.Context, e db.Endpoint) (portal.Secrets, error) {
	p, err := s.secretsPanel(c.Request().Context(), e.ID, true)
	if err != nil {
		return portal.Secrets{}, err
	}
	return portal.Secrets{EndpointID: e.ID, Kind: e.Kind, List: p.List, Now: p.Now, CSRF: portalOf(c).CSRF}, nil
}

// portalDeadWindow is how far back the portal groups dead letters.
const portalDeadWindow = 7 * 24 * time.Hour

func (s *Server) portalDead(c echo.Context, endpointID int64) (portal.Dead, error) {
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	d := portal.Dead{EndpointID: endpointID, CSRF: portalOf(c).CSRF,
		Since: s.now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04")}
	clusters, err := s.q.PortalDeadClusters(ctx, db.PortalDeadClustersParams{EndpointID: endpointID, PartnerID: pid, Since: s.now().Add(-portalDeadWindow)})
	if err != nil {
		return d, err
	}
	for _, r := range clusters {
		d.Clusters = append(d.Clusters, portal.Cluster{
			Key:        clusterKey{endpointID, r.ErrorClass, r.StatusCode}.String(),
			ErrorClass: r.ErrorClass, StatusCode: int(r.StatusCode), Count: r.DeadCount,
			FirstDeadAt: r.FirstDeadAt, LastDeadAt: r.LastDeadAt, PrimaryError: r.PrimaryError,
		})
	}
	recent, err := s.q.PortalDeadList(ctx, db.PortalDeadListParams{EndpointID: endpointID, PartnerID: pid, RowLimit: 20})
	if err != nil {
		return d, err
	}
	for _, r := range recent {
		l := portal.DeadLetter{DeliveryID: r.ID, EventID: r.EventID.String(), EventType: r.EventType, Attempts: r.AttemptCount,
			Class: deref(r.LastErrorClass), StatusCode: int(deref(r.LastStatusCode))}
		if r.DeadAt != nil {
			l.DeadAt = *r.DeadAt
		}
		d.Recent = append(d.Recent, l)
	}
	return d, nil
}

// portalEventsPage: GET /portal/events?q=&cursor= — the event log of the
// partner's deliveries, through the event log's statements with the
// partner's id as their partner filter.
func (s *Server) portalEventsPage(c echo.Context) error {
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	q := c.QueryParam("q")
	p := db.EventPageByDeliveryParams{PartnerID: &pid, RowLimit: eventsPageLimit + 1}
	if v := c.QueryParam("cursor"); v != "" {
		t, idText, ok := decodeCursor(v)
		id, err := uuid.Parse(idText)
		if !ok || err != nil {
			return invalidField("cursor", "is not a page of this list")
		}
		p.BeforeCreatedAt, p.BeforeID = &t, &id
	}
	rows, err := s.eventPage(ctx, p, q)
	if err != nil {
		return err
	}
	page := portal.Events{Q: q, Keys: s.cfg.SearchKeys}
	if len(rows) > eventsPageLimit {
		rows = rows[:eventsPageLimit]
		last := rows[eventsPageLimit-1]
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("cursor", encodeCursor(last.CreatedAt, last.ID.String()))
		page.NextURL = "/portal/events?" + v.Encode()
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	chips := map[uuid.UUID][]portal.Chip{}
	if len(ids) > 0 {
		refs, err := s.q.PortalDeliveryRefsByEvents(ctx, db.PortalDeliveryRefsByEventsParams{EventIds: ids, PartnerID: pid})
		if err != nil {
			return err
		}
		for _, r := range refs {
			chips[r.EventID] = append(chips[r.EventID], portal.Chip{Endpoint: r.EndpointName, Status: r.Status})
		}
	}
	for _, r := range rows {
		row := portal.EventRow{ID: r.ID.String(), Type: r.Type, CreatedAt: r.CreatedAt, Deliveries: chips[r.ID]}
		for i, k := range r.SearchKeys {
			if i < len(r.SearchValues) {
				row.SearchKeys = append(row.SearchKeys, [2]string{k, r.SearchValues[i]})
			}
		}
		page.Rows = append(page.Rows, row)
	}
	return s.render(c, http.StatusOK, portal.EventsPage(s.portalMeta(c, "Events", portal.NavEvents), page))
}

// portalEventPage: GET /portal/events/:id — the event and the partner's
// deliveries of it (another partner's deliveries are not loaded), with
// each attempt and the request as sent, custom header values masked.
func (s *Server) portalEventPage(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return notFound("event")
	}
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	ev, dels, attempts, err := s.portalEventRecord(ctx, pid, id)
	if err != nil {
		return missing(err, "event")
	}
	page := portal.Event{ID: ev.ID.String(), Type: ev.Type, CreatedAt: ev.CreatedAt, CSRF: portalOf(c).CSRF, Now: s.now()}
	// The whole payload is what a webhook receives; a postback receives
	// only its template's values, so a postback-only partner does not see
	// the rest of the producer's payload.
	for _, d := range dels {
		if d.EndpointKind == "webhook" {
			page.Payload = prettyJSON(ev.Payload)
		}
	}
	for i, k := range ev.SearchKeys {
		if i < len(ev.SearchValues) {
			page.SearchKeys = append(page.SearchKeys, [2]string{k, ev.SearchValues[i]})
		}
	}
	partnerName := func(int64) (string, error) { return portalOf(c).PartnerName, nil }
	mine := make([]db.DeliveryListByEventRow, len(dels))
	for i, d := range dels {
		mine[i] = db.DeliveryListByEventRow(d)
	}
	if page.Deliveries, err = s.eventDeliveries(c, ev, mine, attempts, partnerName); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.EventPage(s.portalMeta(c, "Event "+page.ID, portal.NavEvents), page))
}

// portalEventRecord is eventRecord for one partner: the event only when
// it has a delivery to one of the partner's endpoints, and only those
// deliveries and their attempts. An event of others only is
// pgx.ErrNoRows.
func (s *Server) portalEventRecord(ctx context.Context, partnerID int64, id uuid.UUID) (db.Event, []db.PortalDeliveryListByEventRow, []db.DeliveryAttempt, error) {
	ev, err := s.q.PortalEventGet(ctx, db.PortalEventGetParams{ID: id, PartnerID: partnerID})
	if err != nil {
		return db.Event{}, nil, nil, err
	}
	dels, err := s.q.PortalDeliveryListByEvent(ctx, db.PortalDeliveryListByEventParams{EventID: id, PartnerID: partnerID})
	if err != nil {
		return db.Event{}, nil, nil, err
	}
	attempts, err := s.q.PortalAttemptListByEvent(ctx, db.PortalAttemptListByEventParams{EventID: id, PartnerID: partnerID, NotBefore: ev.CreatedAt.Add(-eventAttemptsSlack)})
	if err != nil {
		return db.Event{}, nil, nil, err
	}
	return ev, dels, attempts, nil
}

// portalHealthFragment renders the health panel after a breaker action.
func (s *Server) portalHealthFragment(c echo.Context, r db.PortalEndpointGetRow) error {
	h, err := s.healthPanel(c.Request().Context(), db.EndpointGetWithHealthRow(r), true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.HealthPanel(h, portalOf(c).CSRF))
}
