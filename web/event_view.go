package web

// An event's deliveries, attempts and exact requests as the dashboard's and
// the portal's event pages show them.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/event"
	"github.com/hookline/hookline/worker/request"
	"github.com/labstack/echo/v4"
)

// classSkipped is the worker's error class of a postback value the
// endpoint's map lacks: under unmapped "skip" the delivery is recorded as
// delivered without a send (it is finished and never retried, and the
// queue keeps its invariants), and the event log shows it as skipped.
const classSkipped = "unmapped_value"

// classSuppressed is the worker's error class of a conversion event that
// did not change its conversion's status (fire_on "change"): recorded
// delivered without a send, shown as suppressed with the reason.
const classSuppressed = "suppressed"

// eventDeliveries maps an event's deliveries and their attempts to the
// event page's view, each with the request hookline sends it (the
// dashboard's event page and the partner portal's).
func (s *Server) eventDeliveries(c echo.Context, ev db.Event, dels []db.DeliveryListByEventRow, attempts []db.DeliveryAttempt, partnerName func(int64) (string, error)) ([]event.Delivery, error) {
	byDelivery := map[int64][]event.Attempt{}
	for _, a := range attempts {
		at := event.Attempt{No: a.AttemptNo, At: a.StartedAt, DurationMs: a.DurationMs, Outcome: a.Outcome,
			Class: deref(a.ErrorClass), Error: deref(a.Error), Excerpt: deref(a.ResponseExcerpt),
			Egress: attemptEgressOf(a).view(isPortal(c))}
		if a.StatusCode != nil {
			at.StatusCode = int(*a.StatusCode)
		}
		if a.ResponsePrivate != nil && *a.ResponsePrivate && isPortal(c) {
			// What a private address answered is the operator's network
			// talking: the portal never shows it.
			at.Excerpt = ""
		}
		if at.Class == classSkipped && at.Outcome == "ok" {
			at.Outcome = "skipped" // nothing was sent; the error says why
		}
		if at.Class == classSuppressed && at.Outcome == "ok" {
			at.Outcome = "suppressed" // the conversion's status was unchanged; the error says why
		}
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], at)
	}
	out := make([]event.Delivery, 0, len(dels))
	for _, d := range dels {
		dv := event.Delivery{ID: d.ID, EndpointID: d.EndpointID, Endpoint: d.EndpointName, Status: d.Status,
			AttemptCount: d.AttemptCount, MaxAttempts: d.MaxAttempts, Attempts: byDelivery[d.ID]}
		if n := len(dv.Attempts); d.Status == "delivered" && n > 0 && (dv.Attempts[n-1].Outcome == "skipped" || dv.Attempts[n-1].Outcome == "suppressed") {
			dv.Status = dv.Attempts[n-1].Outcome
		}
		if d.Status == "pending" || d.Status == "failed" {
			t := d.NextAttemptAt
			dv.NextAttemptAt = &t
		}
		if err := s.eventRequest(c, ev, &dv, partnerName); err != nil {
			return nil, err
		}
		out = append(out, dv)
	}
	return out, nil
}

// prettyJSON indents a stored payload for reading.
func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// eventRequest fills in a delivery's partner and the request hookline sends
// it: built by worker/request from the endpoint as saved now (its secrets
// opened with the server's key), the event, and the last attempt's number
// and time (the first attempt's, at the event's time, when none was made),
// shown redacted, so no custom header value or secret appears.
func (s *Server) eventRequest(c echo.Context, ev db.Event, d *event.Delivery, partnerName func(int64) (string, error)) error {
	ctx := c.Request().Context()
	cfg, keys, err := s.savedTestFireConfig(ctx, d.EndpointID)
	if err != nil {
		return err
	}
	if d.Partner, err = partnerName(cfg.PartnerID); err != nil {
		return err
	}
	no, at := 1, ev.CreatedAt
	d.RequestNote = "Not sent yet: the first attempt as built from the endpoint's current settings and secrets."
	if n := len(d.Attempts); n > 0 {
		last := d.Attempts[n-1]
		no, at = int(last.No), last.At
		d.RequestNote = "Attempt #" + strconv.Itoa(no) + ", signed for its start at " + at.UTC().Format(time.RFC3339) + ", as built from the endpoint's current settings and secrets."
	}
	req, err := testFireRequest(cfg, keys, request.Event{ID: ev.ID.String(), Type: ev.Type, Payload: ev.Payload, Attempt: no}, at)
	if err != nil {
		d.RequestNote = "No request can be built: " + err.Error()
		return nil
	}
	v := req.Redacted("hookline/" + s.cfg.Version)
	d.Request, d.Curl = v.String(), v.Curl()
	return nil
}
