package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/portal"
)

// Portal actions. Each first loads its object through a statement scoped
// to the session's partner (another partner's id is a 404), then calls the
// operation the dashboard and the API use, audited as the partner.

// portalBreaker: POST /portal/endpoints/:id/{pause,resume}
func (s *Server) portalBreaker(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, err := s.portalEndpoint(c)
		if err != nil {
			return err
		}
		if _, err := s.breakerAction(c.Request().Context(), r.Endpoint.ID, action, portalOf(c).actor()); err != nil {
			return err
		}
		if !isHTMX(c) {
			s.addFlash(c, layout.FlashSuccess, "Deliveries "+map[string]string{actionPause: "paused", actionResume: "resumed"}[action]+".")
			return c.Redirect(http.StatusSeeOther, portalEndpointPath(r.Endpoint.ID))
		}
		if r, err = s.portalEndpoint(c); err != nil {
			return err
		}
		return s.portalHealthFragment(c, r)
	}
}

func portalEndpointPath(id int64) string {
	return portalPath + "/endpoints/" + strconv.FormatInt(id, 10)
}

// portalTestFire: POST /portal/endpoints/:id/test — one signed sample
// event to the endpoint as saved; the request is shown with custom header
// values masked.
func (s *Server) portalTestFire(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cfg, keys, err := s.savedTestFireConfig(ctx, r.Endpoint.ID)
	if err != nil {
		return err
	}
	o := fireOpts{partner: cfg.URLSetBy == urlSetByPartner, portal: true}
	if o.egress, err = s.fireEgress(ctx, r.Endpoint.ID, true); err != nil {
		return err
	}
	res := s.testFire(ctx, cfg, keys, o)
	if err := audit(ctx, s.q, portalOf(c).actor(), "endpoint.test_fire", "endpoint", r.Endpoint.ID,
		map[string]any{"outcome": res.Outcome, "status_code": res.StatusCode}); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.TestResult(res))
}

// portalRotate: POST /portal/endpoints/:id/rotate — a new signing secret,
// in this response only, the old ones signing for the chosen overlap.
func (s *Server) portalRotate(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	secret, oldUntil, err := s.rotateFromForm(c, r.Endpoint.ID, portalOf(c).actor())
	if err != nil {
		return err
	}
	p, err := s.portalSecrets(c, r.Endpoint)
	if err != nil {
		return err
	}
	p.NewSecret, p.OldUntil = secret, oldUntil
	return s.render(c, http.StatusOK, portal.SecretsPanel(p))
}

// portalSecretExpire: POST /portal/endpoints/:id/secrets/:secret/expire —
// an old secret stops signing now (the partner has switched).
func (s *Server) portalSecretExpire(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	sid, ok := parseID(c.Param("secret"))
	if !ok {
		return notFound("secret")
	}
	ctx := c.Request().Context()
	pid := portalOf(c).PartnerID
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		n, err := q.PortalSecretExpire(ctx, db.PortalSecretExpireParams{ID: sid, EndpointID: r.Endpoint.ID, PartnerID: pid, Now: s.nowPtr()})
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("secret")
		}
		return audit(ctx, q, portalOf(c).actor(), "endpoint.expire_secret", "endpoint", r.Endpoint.ID, map[string]any{"secret_id": sid})
	})
	if err != nil {
		return err
	}
	if !isHTMX(c) {
		s.addFlash(c, layout.FlashSuccess, "The old secret no longer signs.")
		return c.Redirect(http.StatusSeeOther, portalEndpointPath(r.Endpoint.ID))
	}
	p, err := s.portalSecrets(c, r.Endpoint)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.SecretsPanel(p))
}

// portalReplay: POST /portal/endpoints/:id/replay {cluster | since} —
// replays one cluster of the endpoint's dead letters (its key must name
// this endpoint) or every dead letter since a time.
func (s *Server) portalReplay(c echo.Context) error {
	r, err := s.portalEndpoint(c)
	if err != nil {
		return err
	}
	id := r.Endpoint.ID
	var sel replaySelector
	if key := c.FormValue("cluster"); key != "" {
		k, ok := parseClusterKey(key)
		if !ok || k.EndpointID != id {
			return notFound("dead-letter cluster")
		}
		sel = replaySelector{Cluster: key, Hours: int(portalDeadWindow / time.Hour)}
	} else {
		since, err := parseLocalTime(c.FormValue("since"))
		if err != nil {
			return invalidField("since", "choose the date and time to replay from")
		}
		sel = replaySelector{EndpointID: id, Since: &since}
	}
	res, err := s.replay(c.Request().Context(), sel, portalOf(c).actor())
	if err != nil {
		return err
	}
	return s.portalAfterReplay(c, id, len(res.IDs))
}

// portalReplayOne: POST /portal/deliveries/:id/replay — one dead letter.
func (s *Server) portalReplayOne(c echo.Context) error {
	d, err := s.portalDelivery(c)
	if err != nil {
		return err
	}
	res, err := s.replay(c.Request().Context(), replaySelector{DeliveryIDs: []int64{d.ID}}, portalOf(c).actor())
	if err != nil {
		return err
	}
	return s.portalAfterReplay(c, d.EndpointID, len(res.IDs))
}

func (s *Server) portalAfterReplay(c echo.Context, endpointID int64, n int) error {
	if !isHTMX(c) {
		s.addFlash(c, layout.FlashSuccess, strconv.Itoa(n)+" dead letters queued again.")
		return c.Redirect(http.StatusSeeOther, portalEndpointPath(endpointID))
	}
	d, err := s.portalDead(c, endpointID)
	if err != nil {
		return err
	}
	d.DidReplay, d.Replayed = true, n
	return s.render(c, http.StatusOK, portal.DeadPanel(d))
}

// portalDelivery loads a delivery to one of the session partner's
// endpoints, or a 404.
func (s *Server) portalDelivery(c echo.Context) (db.PortalDeliveryGetRow, error) {
	id, err := pathID(c, "delivery")
	if err != nil {
		return db.PortalDeliveryGetRow{}, err
	}
	d, err := s.q.PortalDeliveryGet(c.Request().Context(), db.PortalDeliveryGetParams{ID: id, PartnerID: portalOf(c).PartnerID})
	if err != nil {
		return d, missing(err, "delivery")
	}
	return d, nil
}

// portalResend: POST /portal/deliveries/:id/resend — the delivery is sent
// again with the same webhook-id; back to its event.
func (s *Server) portalResend(c echo.Context) error {
	d, err := s.portalDelivery(c)
	if err != nil {
		return err
	}
	return s.resendFromPage(c, d.ID, portalOf(c).actor(), portalPath+"/events/"+url.PathEscape(d.EventID.String()),
		"This delivery is being sent right now; send it again once the attempt has finished.",
		"Queued again: it is sent with the same webhook-id in a moment.")
}
