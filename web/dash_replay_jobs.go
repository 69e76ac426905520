package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/replay"
	"github.com/hookline/hookline/web/account"
)

// bulkReplayForm reads the replay form's filter (query or form values) as
// typed, and the filter it means; a value that does not parse is a field
// error.
func bulkReplayForm(c echo.Context) (replay.Form, bulkReplay, error) {
	f := replay.Form{
		Status: c.FormValue("status"), EndpointID: c.FormValue("endpoint_id"), EventType: strings.TrimSpace(c.FormValue("event_type")),
		Q: strings.TrimSpace(c.FormValue("q")), Since: c.FormValue("since"), Until: c.FormValue("until"),
	}
	sel := bulkReplay{Status: f.Status}
	if f.EndpointID != "" {
		id, err := strconv.ParseInt(f.EndpointID, 10, 64)
		if err != nil {
			return f, sel, invalidField("endpoint_id", "must be an endpoint id")
		}
		sel.EndpointID = &id
	}
	if f.EventType != "" {
		sel.EventType = &f.EventType
	}
	if f.Q != "" {
		sel.Q = &f.Q
	}
	for _, t := range []struct {
		name, text string
		dst        **time.Time
	}{{"since", f.Since, &sel.Since}, {"until", f.Until, &sel.Until}} {
		if t.text == "" {
			continue
		}
		at, err := parseLocalTime(t.text)
		if err != nil {
			return f, sel, invalidField(t.name, "must be a date and time")
		}
		*t.dst = &at
	}
	return f, sel, nil
}

// bulkReplayPage: GET /deliveries/replay[?...&preview=1] — the form; with
// preview, the count of deliveries the filter matches and, for
// operators, the button that starts the replay.
func (s *Server) bulkReplayPage(c echo.Context) error {
	ctx := c.Request().Context()
	f, sel, err := bulkReplayForm(c)
	if err == nil && c.QueryParam("preview") != "" {
		f.Count, err = s.countBulkReplay(ctx, &sel)
		f.Counted = err == nil
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || ae.Field == "" {
			return err
		}
		f.Errors = map[string]string{ae.Field: ae.Message}
	}
	if f.Status == "" {
		f.Status = "dead"
	}
	eps, err := s.q.EndpointOptions(ctx)
	if err != nil {
		return err
	}
	for _, e := range eps {
		f.Endpoints = append(f.Endpoints, components.Option{Value: strconv.FormatInt(e.ID, 10), Label: e.PartnerName + " · " + e.Name})
	}
	p := principalOf(c)
	f.CanOperate, f.CSRF = p.can(account.RoleOperator), p.CSRF
	status := http.StatusOK
	if len(f.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return s.render(c, status, replay.FormPage(s.meta(c, "Bulk replay", layout.NavDeadLetters), f))
}

// bulkReplayStart: POST /deliveries/replay — starts the replay the form
// previewed and opens its progress.
func (s *Server) bulkReplayStart(c echo.Context) error {
	_, sel, err := bulkReplayForm(c)
	if err != nil {
		return err
	}
	job, ok, err := s.startBulkReplay(c.Request().Context(), sel, principalOf(c).actor())
	if err != nil {
		return err
	}
	if !ok {
		s.addFlash(c, layout.FlashInfo, "No delivery matches this filter any more: nothing was replayed.")
		return c.Redirect(http.StatusSeeOther, "/deliveries/replay")
	}
	s.addFlash(c, layout.FlashSuccess, "Replay started: "+components.Count(job.Total)+" deliveries are being re-queued.")
	return c.Redirect(http.StatusSeeOther, "/replays/"+strconv.FormatInt(job.ID, 10))
}

// replayJobPage: GET /replays/:id — a replay's progress; an htmx request
// gets the progress fragment alone.
func (s *Server) replayJobPage(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := s.replayJob(ctx, id)
	if err != nil {
		return err
	}
	p := principalOf(c)
	j := replay.Job{
		ID: v.ID, State: v.State, Status: v.Filter.Status, Q: deref(v.Filter.Q), EventType: deref(v.Filter.EventType),
		Since: v.Filter.Since, Until: v.Filter.Until, Total: v.Total, Replayed: v.Replayed,
		Delivered: v.Delivered, Waiting: v.Waiting, Dead: v.Dead, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt,
		FinishedAt: v.FinishedAt, CanOperate: p.can(account.RoleOperator), CSRF: p.CSRF,
	}
	if v.Filter.EndpointID != nil {
		e, err := s.q.EndpointGet(ctx, *v.Filter.EndpointID)
		if err != nil {
			return err
		}
		j.EndpointID, j.Endpoint = e.ID, e.Name
	}
	if isHTMX(c) {
		return s.render(c, http.StatusOK, replay.JobFragment(j))
	}
	return s.render(c, http.StatusOK, replay.JobPage(s.meta(c, "Replay "+strconv.FormatInt(id, 10), layout.NavDeadLetters), j))
}

// replayJobCancel: POST /replays/:id/cancel.
func (s *Server) replayJobCancel(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	if err := s.cancelReplayJob(c.Request().Context(), id, principalOf(c).actor()); err != nil {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "Replay stopped. What it re-queued stays queued.")
	return c.Redirect(http.StatusSeeOther, "/replays/"+strconv.FormatInt(id, 10))
}
