package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/conversions"
	"github.com/hookline/hookline/views/layout"
)

// conversionsPage: GET /conversions — the counts per partner and day and
// the conversions of the filter, for every partner.
func (s *Server) conversionsPage(c echo.Context) error {
	p, err := s.conversionsView(c, "/conversions", nil)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, conversions.Page(s.meta(c, "Conversions", layout.NavConversions), p))
}

// conversionHistoryPage: GET /conversions/history?endpoint_id=&key=.
func (s *Server) conversionHistoryPage(c echo.Context) error {
	h, err := s.conversionHistoryView(c, "/conversions", "/events/", nil)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, conversions.HistoryPage(s.meta(c, "Conversion "+h.Key, layout.NavConversions), h))
}

// conversionsView maps a conversions request to the view; partner, when
// set (the portal), is the only partner read and no partner choice is
// offered.
func (s *Server) conversionsView(c echo.Context, base string, partner *int64) (conversions.PageData, error) {
	ctx := c.Request().Context()
	f, err := conversionQuery(c, s.now())
	if err != nil {
		return conversions.PageData{}, err
	}
	if partner != nil {
		f.Partner = partner
	}
	page, err := s.conversions(ctx, f)
	if err != nil {
		return conversions.PageData{}, err
	}
	p := conversions.PageData{Now: s.now(), Filter: conversions.Filter{Base: base, Status: c.QueryParam("status"),
		From: f.From.Format(dayLayout), To: f.To.Format(dayLayout)}}
	if f.Partner != nil && partner == nil {
		p.Filter.Partner = strconv.FormatInt(*f.Partner, 10)
	}
	if f.Endpoint != nil {
		p.Filter.Endpoint = strconv.FormatInt(*f.Endpoint, 10)
	}
	if err := s.conversionOptions(ctx, &p.Filter, partner); err != nil {
		return p, err
	}
	for _, d := range conversionDaysJSON(page) {
		var pay []string
		for _, ps := range d.Payout {
			pay = append(pay, ps.Amount+" "+ps.Currency)
		}
		p.Days = append(p.Days, conversions.Day{Partner: d.PartnerName, Day: d.Day, Fired: d.Fired, Suppressed: d.Suppressed,
			Rejected: d.Rejected, Failed: d.Failed, Payout: strings.Join(pay, ", ")})
	}
	for _, r := range page.Rows {
		row := conversions.Row{Partner: r.PartnerName, Endpoint: r.EndpointName, EndpointID: r.EndpointID, Key: r.ConversionKey,
			Status: deref(r.Status), Producer: deref(r.ProducerStatus), Sending: deref(r.SendingStatus), UpdatedAt: r.UpdatedAt}
		if r.Payout != nil {
			row.Payout = strings.TrimSpace(*r.Payout + " " + deref(r.Currency))
		}
		p.Rows = append(p.Rows, row)
	}
	if page.Next != "" {
		v := c.QueryParams()
		q := p.Filter.Values()
		if l := v.Get("limit"); l != "" {
			q.Set("limit", l)
		}
		q.Set("cursor", page.Next)
		p.NextURL = base + "?" + q.Encode()
	}
	return p, nil
}

// conversionOptions fills the filter's choices: partners (the dashboard's
// only) and the endpoints that fire on a change.
func (s *Server) conversionOptions(ctx context.Context, f *conversions.Filter, partner *int64) error {
	if partner == nil {
		parts, err := s.q.PartnerList(ctx)
		if err != nil {
			return err
		}
		for _, p := range parts {
			f.Partners = append(f.Partners, conversions.Option{Value: strconv.FormatInt(p.ID, 10), Label: p.Name})
		}
	}
	eps, err := s.q.ConversionEndpoints(ctx, partner)
	if err != nil {
		return err
	}
	for _, e := range eps {
		f.Endpoints = append(f.Endpoints, conversions.Option{Value: strconv.FormatInt(e.ID, 10), Label: e.Name})
	}
	return nil
}

// conversionHistoryView maps one conversion's history to the view; a
// conversion another partner owns is not found, like a missing one.
func (s *Server) conversionHistoryView(c echo.Context, base, eventBase string, partner *int64) (conversions.HistoryData, error) {
	ctx := c.Request().Context()
	ep, key, err := conversionHistoryQuery(c)
	if err != nil {
		return conversions.HistoryData{}, err
	}
	rows, err := s.q.ConversionHistory(ctx, db.ConversionHistoryParams{EndpointID: ep, ConversionKey: key, PartnerID: partner})
	if err != nil {
		return conversions.HistoryData{}, err
	}
	if len(rows) == 0 {
		return conversions.HistoryData{}, notFound("conversion")
	}
	h := conversions.HistoryData{Base: base, Key: key, Now: s.now(), Endpoint: "endpoint " + strconv.FormatInt(ep, 10)}
	for _, r := range conversionSteps(rows) {
		st := conversions.Step{At: r.At, EventID: r.EventID.String(), EventHref: eventBase + r.EventID.String(), DeliveryID: r.DeliveryID,
			Attempt: r.Attempt, Producer: r.ProducerStatus, Status: r.Status, Outcome: r.Outcome, Reason: r.Reason, Rejection: r.Rejection}
		if r.Payout != nil {
			st.Payout = strings.TrimSpace(*r.Payout + " " + r.Currency)
		}
		h.Steps = append(h.Steps, st)
	}
	return h, nil
}
