package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/event"
	"github.com/hookline/hookline/views/events"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
)

// eventsPage: GET /events?q=&type=&partner_id=&endpoint_id=&status=&since=&until=&cursor=
// — the event log, newest first, through the same statements as the API's
// GET /api/v1/events.
func (s *Server) eventsPage(c echo.Context) error {
	f, p, err := eventsFilter(c)
	if err != nil {
		return err
	}
	p.RowLimit = eventsPageLimit + 1
	ctx := c.Request().Context()
	rows, err := s.eventPage(ctx, p, f.Q)
	if err != nil {
		return err
	}
	page := events.PageData{Filter: f, Now: s.now()}
	if p.BeforeID == nil && len(rows) > 0 {
		page.NewEvents = &events.NewEvents{PollURL: events.NewEventsURL(f, rows[0].CreatedAt), ShowURL: events.ShowURL(f)}
	}
	if len(rows) > eventsPageLimit {
		rows = rows[:eventsPageLimit]
		last := rows[eventsPageLimit-1]
		v := f.Values()
		v.Set("cursor", encodeCursor(last.CreatedAt, last.ID.String()))
		page.NextURL = "/events?" + v.Encode()
	}

	eps, err := s.q.EndpointOptions(ctx)
	if err != nil {
		return err
	}
	names := make(map[int64]string, len(eps))
	for _, e := range eps {
		names[e.ID] = e.Name
		page.Endpoints = append(page.Endpoints, events.Option{ID: e.ID, Name: e.PartnerName + " · " + e.Name})
	}
	partners, err := s.q.PartnerList(ctx)
	if err != nil {
		return err
	}
	for _, pr := range partners {
		page.Partners = append(page.Partners, events.Option{ID: pr.ID, Name: pr.Name})
	}

	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	chips := map[uuid.UUID][]events.Chip{}
	if len(ids) > 0 {
		refs, err := s.q.DeliveryRefsByEvents(ctx, ids)
		if err != nil {
			return err
		}
		for _, r := range refs {
			chips[r.EventID] = append(chips[r.EventID], events.Chip{Endpoint: names[r.EndpointID], Status: r.Status})
		}
	}
	for _, r := range rows {
		row := events.Row{ID: r.ID.String(), Type: r.Type, CreatedAt: r.CreatedAt, IdempotencyKey: deref(r.IdempotencyKey), Deliveries: chips[r.ID]}
		for i, k := range r.SearchKeys {
			if i < len(r.SearchValues) {
				row.SearchKeys = append(row.SearchKeys, events.KeyValue{Key: k, Value: r.SearchValues[i]})
			}
		}
		page.Rows = append(page.Rows, row)
	}
	return s.render(c, http.StatusOK, events.Page(s.meta(c, "Events", layout.NavEvents), page))
}

// eventsNew: GET /events/new?after=&<filters> — how many events matching
// the filters arrived after the first page's newest (at after), for the
// "12 new events — show" announcement; counted with the log's statements.
func (s *Server) eventsNew(c echo.Context) error {
	f, p, err := eventsFilter(c)
	if err != nil {
		return err
	}
	after, err := time.Parse(time.RFC3339Nano, c.QueryParam("after"))
	if err != nil {
		return invalidField("after", "must be an RFC 3339 time")
	}
	since := after.Add(time.Microsecond) // stored times have microseconds
	if p.Since == nil || p.Since.Before(since) {
		p.Since = &since
	}
	p.BeforeCreatedAt, p.BeforeID = nil, nil
	p.RowLimit = events.NewEventsCap
	rows, err := s.eventPage(c.Request().Context(), p, f.Q)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, events.NewEventsView(events.NewEvents{
		PollURL: events.NewEventsURL(f, after), ShowURL: events.ShowURL(f), Count: len(rows),
	}))
}

// eventsFilter reads the log's filters from the URL, checked as the API
// checks them; the time range comes from datetime-local inputs (UTC).
func eventsFilter(c echo.Context) (events.Filter, db.EventPageByDeliveryParams, error) {
	var f events.Filter
	var p db.EventPageByDeliveryParams
	var err error
	f.Q = c.QueryParam("q")
	if p.PartnerID, err = idParam(c, "partner_id"); err != nil {
		return f, p, err
	}
	if p.PartnerID != nil {
		f.PartnerID = *p.PartnerID
	}
	if p.EndpointID, err = idParam(c, "endpoint_id"); err != nil {
		return f, p, err
	}
	if p.EndpointID != nil {
		f.EndpointID = *p.EndpointID
	}
	if v := c.QueryParam("status"); v != "" {
		st, ok := deliveryStatusFilter[v]
		if !ok {
			return f, p, invalidField("status", "must be one of pending, awaiting_retry, in_flight, delivered, dead")
		}
		f.Status, p.Status = v, &st
	}
	if v := c.QueryParam("type"); v != "" {
		if len(v) > maxEventTypeFilter {
			return f, p, invalidField("type", "must be an event type (at most 200 characters), or a prefix ending in *")
		}
		f.Type, p.Type = v, &v
	}
	for _, t := range []struct {
		name string
		text *string
		dst  **time.Time
	}{{"since", &f.Since, &p.Since}, {"until", &f.Until, &p.Until}} {
		v := c.QueryParam(t.name)
		if v == "" {
			continue
		}
		at, err := parseLocalTime(v)
		if err != nil {
			return f, p, invalidField(t.name, "must be a date and time")
		}
		*t.text, *t.dst = v, &at
	}
	if v := c.QueryParam("cursor"); v != "" {
		t, idText, ok := decodeCursor(v)
		id, err := uuid.Parse(idText)
		if !ok || err != nil {
			return f, p, invalidField("cursor", "is not a page of this list")
		}
		p.BeforeCreatedAt, p.BeforeID = &t, &id
	}
	return f, p, nil
}

// eventPageView: GET /events/:id — the event, every delivery with its
// attempts and the request hookline sends, and resend for operators.
func (s *Server) eventPageView(c echo.Context) error {
	raw := c.Param("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return s.eventNotFound(c, raw)
	}
	ctx := c.Request().Context()
	ev, dels, attempts, err := s.eventRecord(ctx, id)
	if db.NoRows(err) {
		return s.eventNotFound(c, raw)
	}
	if err != nil {
		return err
	}
	pr := principalOf(c)
	page := event.PageData{
		ID: ev.ID.String(), Type: ev.Type, CreatedAt: ev.CreatedAt, IdempotencyKey: deref(ev.IdempotencyKey),
		Payload: prettyJSON(ev.Payload), CanOperate: pr.can(account.RoleOperator), CSRF: pr.CSRF, Now: s.now(),
	}
	for i, k := range ev.SearchKeys {
		if i < len(ev.SearchValues) {
			page.SearchKeys = append(page.SearchKeys, [2]string{k, ev.SearchValues[i]})
		}
	}
	partnerNames := map[int64]string{}
	partnerName := func(pid int64) (string, error) {
		if n, ok := partnerNames[pid]; ok {
			return n, nil
		}
		p, err := s.q.PartnerGet(ctx, pid)
		if err != nil {
			return "", err
		}
		partnerNames[pid] = p.Name
		return p.Name, nil
	}
	if ev.PartnerID != nil {
		if page.Partner, err = partnerName(*ev.PartnerID); err != nil {
			return err
		}
	}
	if page.Deliveries, err = s.eventDeliveries(c, ev, dels, attempts, partnerName); err != nil {
		return err
	}
	if page.Filtered, err = s.filteredEndpoints(ctx, ev); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, event.Page(s.meta(c, "Event "+page.ID, layout.NavEvents), page))
}

// filteredEndpoints are the endpoints that take ev's type but whose payload
// filter, as saved now, rejects its payload (so fan-out made no delivery).
func (s *Server) filteredEndpoints(ctx context.Context, ev db.Event) ([]event.FilteredEndpoint, error) {
	rows, err := s.q.EventFilteredEndpoints(ctx, db.EventFilteredEndpointsParams{
		PartnerID: ev.PartnerID, EventType: ev.Type, EventID: ev.ID})
	if err != nil {
		return nil, fmt.Errorf("load the endpoints filtering the event: %w", err)
	}
	var out []event.FilteredEndpoint
	for _, r := range rows {
		f, err := s.filters.Compile(r.Filter)
		if err != nil || f.Match(ev.Payload) {
			continue // a filter that does not compile filters nothing
		}
		out = append(out, event.FilteredEndpoint{ID: r.ID, Name: r.Name, Partner: r.PartnerName, Filter: f.String()})
	}
	return out, nil
}

// eventNotFound is the 404 page of an unknown event id, offering the search.
func (s *Server) eventNotFound(c echo.Context, id string) error {
	if readsReplica(c) {
		return notFound("event") // the replica may only lag: replicaReads asks the primary
	}
	return s.render(c, http.StatusNotFound, event.NotFound(s.meta(c, "Event not found", layout.NavEvents), id))
}

// deliveryResendForm: POST /deliveries/:id/resend (operator) — the API's
// resend, from the event page; back to the event page with a message.
func (s *Server) deliveryResendForm(c echo.Context) error {
	id, err := pathID(c, "delivery")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := s.q.DeliveryGet(ctx, id)
	if err != nil {
		return missing(err, "delivery")
	}
	return s.resendFromPage(c, id, principalOf(c).actor(), "/events/"+url.PathEscape(d.EventID.String()),
		"This delivery is being sent right now; resend it once the attempt has finished.",
		"Delivery queued again: it is sent with the same webhook-id, through the breaker and the rate limit.")
}
