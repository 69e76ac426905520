package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// Alike in shape to alertEndpoint (stats.go) by chance: ids and names of what it is about.
type conversionJSON struct {
	EndpointID     int64      `json:"endpoint_id"`
	EndpointName   string     `json:"endpoint_name"`
	PartnerID      int64      `json:"partner_id"`
	PartnerName    string     `json:"partner_name"`
	Key            string     `json:"key"`
	Status         *string    `json:"status"`
	ProducerStatus *string    `json:"producer_status"`
	EventID        *uuid.UUID `json:"event_id"`
	StatusAt       *time.Time `json:"status_at"`
	Payout         *string    `json:"payout"`
	Currency       *string    `json:"currency"`
	Sending        *string    `json:"sending_status"`
	FirstAt        time.Time  `json:"first_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

type conversionDayJSON struct {
	PartnerID   int64       `json:"partner_id"`
	PartnerName string      `json:"partner_name"`
	Day         string      `json:"day"`
	Fired       int64       `json:"fired"`
	Suppressed  int64       `json:"suppressed"`
	Rejected    int64       `json:"rejected"`
	Failed      int64       `json:"failed"`
	Payout      []payoutSum `json:"payout"`
}

type conversionStepJSON struct {
	EventID        uuid.UUID `json:"event_id"`
	DeliveryID     int64     `json:"delivery_id"`
	Attempt        int32     `json:"attempt"`
	ProducerStatus string    `json:"producer_status"`
	Status         string    `json:"status"`
	Outcome        string    `json:"outcome"`
	Reason         string    `json:"reason"`
	Rejection      bool      `json:"rejection"`
	Payout         *string   `json:"payout"`
	Currency       string    `json:"currency"`
	At             time.Time `json:"at"`
}

// keyPartner is the partner a key is bound to: it reads that partner's
// conversions only, whatever partner_id it asks for.
func keyPartner(c echo.Context, asked *int64) *int64 {
	if p := apiKeyOf(c).PartnerID; p != nil {
		return p
	}
	return asked
}

// apiConversionList: GET /api/v1/conversions — conversions of endpoints
// that fire on a status change, newest change first, keyset-paged, with
// the decisions per partner and UTC day of the same filters.
func (s *Server) apiConversionList(c echo.Context) error {
	f, err := conversionQuery(c, s.now())
	if err != nil {
		return err
	}
	f.Partner = keyPartner(c, f.Partner)
	p, err := s.conversions(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := make([]conversionJSON, len(p.Rows))
	for i, r := range p.Rows {
		out[i] = conversionJSON{EndpointID: r.EndpointID, EndpointName: r.EndpointName, PartnerID: r.PartnerID, PartnerName: r.PartnerName,
			Key: r.ConversionKey, Status: r.Status, ProducerStatus: r.ProducerStatus, EventID: r.StatusEventID, StatusAt: r.StatusAt,
			Payout: r.Payout, Currency: r.Currency, Sending: r.SendingStatus, FirstAt: r.FirstAt, UpdatedAt: r.UpdatedAt}
	}
	var next *string
	if p.Next != "" {
		next = &p.Next
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out, "next_cursor": next, "days": conversionDaysJSON(p)})
}

func conversionDaysJSON(p conversionPage) []conversionDayJSON {
	days := make([]conversionDayJSON, len(p.Days))
	for i, d := range p.Days {
		day := d.Day.Time.Format(dayLayout)
		pay := p.Payouts[conversionDayKey{d.PartnerID, day}]
		if pay == nil {
			pay = []payoutSum{}
		}
		days[i] = conversionDayJSON{PartnerID: d.PartnerID, PartnerName: d.PartnerName, Day: day,
			Fired: d.Fired, Suppressed: d.Suppressed, Rejected: d.Rejected, Failed: d.Failed, Payout: pay}
	}
	return days
}

// apiConversionHistory: GET /api/v1/conversions/history?endpoint_id=&key=
// — one conversion's decisions, oldest first.
func (s *Server) apiConversionHistory(c echo.Context) error {
	ep, key, err := conversionHistoryQuery(c)
	if err != nil {
		return err
	}
	rows, err := s.q.ConversionHistory(c.Request().Context(), db.ConversionHistoryParams{EndpointID: ep, ConversionKey: key, PartnerID: keyPartner(c, nil)})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return notFound("conversion")
	}
	return c.JSON(http.StatusOK, map[string]any{"endpoint_id": ep, "key": key, "data": conversionSteps(rows)})
}

func conversionSteps(rows []db.ConversionHistoryRow) []conversionStepJSON {
	out := make([]conversionStepJSON, len(rows))
	for i, r := range rows {
		out[i] = conversionStepJSON{EventID: r.EventID, DeliveryID: r.DeliveryID, Attempt: r.AttemptNo, ProducerStatus: r.ProducerStatus,
			Status: r.Status, Outcome: r.Outcome, Reason: r.Reason, Rejection: r.Rejection, Payout: r.Payout, Currency: r.Currency, At: r.At}
	}
	return out
}
