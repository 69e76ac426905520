package web

// The conversions of postback endpoints that fire on a status change
// (worker/conversion.go): their filters, one page of them with the
// per-partner-and-day counts, and one conversion's history, shared by the
// API, the dashboard and the partner portal (which always passes its own
// partner).

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// Conversions are counted by UTC day, at most this many days at once.
const (
	defaultConversionDays = 7
	maxConversionDays     = 366
	dayLayout             = "2006-01-02"
)

// conversionFilter is what a conversions request asks for.
type conversionFilter struct {
	Partner, Endpoint *int64
	Status            *string
	From, To          time.Time // UTC days, both inclusive
	After             *conversionCursor
	Limit             int
}

// conversionCursor is the last row of the previous page.
type conversionCursor struct {
	At       time.Time
	Endpoint int64
	Key      string
}

// conversionQuery reads ?partner_id=&endpoint_id=&status=&from=&to=
// (days, YYYY-MM-DD, UTC, inclusive; the last 7 days when absent)
// &cursor=&limit=, each malformed value a 422 naming it.
func conversionQuery(c echo.Context, now time.Time) (conversionFilter, error) {
	var f conversionFilter
	var err error
	if f.Partner, err = idParam(c, "partner_id"); err != nil {
		return f, err
	}
	if f.Endpoint, err = idParam(c, "endpoint_id"); err != nil {
		return f, err
	}
	if v := strings.TrimSpace(c.QueryParam("status")); v != "" {
		if len(v) > 128 {
			return f, invalidField("status", "status must be at most 128 characters")
		}
		f.Status = &v
	}
	today := now.UTC().Truncate(24 * time.Hour)
	f.To, f.From = today, today.AddDate(0, 0, -(defaultConversionDays-1))
	for _, d := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		v := strings.TrimSpace(c.QueryParam(d.name))
		if v == "" {
			continue
		}
		t, err := time.Parse(dayLayout, v)
		if err != nil {
			return f, invalidField(d.name, d.name+" must be a day such as 2026-05-01 (UTC)")
		}
		*d.dst = t
	}
	if c.QueryParam("from") != "" && c.QueryParam("to") == "" && f.From.After(f.To) {
		f.To = f.From // a day in the future alone: that day
	}
	switch {
	case f.To.Before(f.From):
		return f, invalidField("to", "to must be on or after from")
	case f.To.Sub(f.From) >= maxConversionDays*24*time.Hour:
		return f, invalidField("from", "at most 366 days at once")
	}
	if f.Limit, err = limitParam(c); err != nil {
		return f, err
	}
	if v := c.QueryParam("cursor"); v != "" {
		at, rest, ok := decodeCursor(v)
		idText, key, ok2 := strings.Cut(rest, "|")
		id, err := strconv.ParseInt(idText, 10, 64)
		if !ok || !ok2 || err != nil || id < 1 {
			return f, invalidField("cursor", "cursor is not one from this list; pass next_cursor unchanged")
		}
		f.After = &conversionCursor{At: at, Endpoint: id, Key: key}
	}
	return f, nil
}

// until is the end of the filter's last day (exclusive).
func (f conversionFilter) until() time.Time { return f.To.AddDate(0, 0, 1) }

// conversionPage is one page of conversions with the days they fall in.
type conversionPage struct {
	Rows    []db.ConversionListRow
	Next    string // the next page's cursor, "" on the last
	Days    []db.ConversionDaysRow
	Payouts map[conversionDayKey][]payoutSum
}

type conversionDayKey struct {
	Partner int64
	Day     string
}

// payoutSum is the payout sent in one currency.
type payoutSum struct {
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

// conversions reads a page of conversions and the per-day counts.
func (s *Server) conversions(ctx context.Context, f conversionFilter) (conversionPage, error) {
	var p conversionPage
	since, until := f.From, f.until()
	lp := db.ConversionListParams{PartnerID: f.Partner, EndpointID: f.Endpoint, Status: f.Status,
		Since: &since, Until: &until, MaxRows: int32(f.Limit + 1)}
	if f.After != nil {
		lp.AfterAt, lp.AfterEndpointID, lp.AfterKey = &f.After.At, f.After.Endpoint, f.After.Key
	}
	rows, err := s.q.ConversionList(ctx, lp)
	if err != nil {
		return p, err
	}
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		last := rows[f.Limit-1]
		p.Next = encodeCursor(last.UpdatedAt, strconv.FormatInt(last.EndpointID, 10)+"|"+last.ConversionKey)
	}
	p.Rows = rows
	if p.Days, err = s.q.ConversionDays(ctx, db.ConversionDaysParams{PartnerID: f.Partner, EndpointID: f.Endpoint,
		Status: f.Status, Since: since, Until: until}); err != nil {
		return p, err
	}
	pays, err := s.q.ConversionPayouts(ctx, db.ConversionPayoutsParams{PartnerID: f.Partner, EndpointID: f.Endpoint,
		Status: f.Status, Since: since, Until: until})
	if err != nil {
		return p, err
	}
	p.Payouts = map[conversionDayKey][]payoutSum{}
	for _, r := range pays {
		k := conversionDayKey{r.PartnerID, r.Day.Time.Format(dayLayout)}
		cur := r.Currency
		if cur == "" {
			cur = "(none)"
		}
		p.Payouts[k] = append(p.Payouts[k], payoutSum{Currency: cur, Amount: r.Amount})
	}
	return p, nil
}

// conversionHistoryQuery reads ?endpoint_id=&key= of one conversion.
func conversionHistoryQuery(c echo.Context) (int64, string, error) {
	id, err := idParam(c, "endpoint_id")
	if err != nil {
		return 0, "", err
	}
	if id == nil {
		return 0, "", invalidField("endpoint_id", "endpoint_id is required: a conversion is one endpoint's")
	}
	key := c.QueryParam("key")
	if key == "" || len(key) > 1024 {
		return 0, "", invalidField("key", "key is required: the conversion's key as the list shows it")
	}
	return *id, key, nil
}
