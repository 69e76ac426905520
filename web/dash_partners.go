package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/partners"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/latency"
)

// partnersPage: GET /partners[?archived=1] — every partner with its
// endpoints at a glance.
func (s *Server) partnersPage(c echo.Context) error {
	ctx := c.Request().Context()
	list, err := s.q.PartnerList(ctx)
	if err != nil {
		return err
	}
	rows, _, dead, err := s.endpointData(ctx)
	if err != nil {
		return err
	}
	byPartner := map[int64][]partners.EndpointBrief{}
	now := s.now()
	for _, r := range rows {
		byPartner[r.Endpoint.PartnerID] = append(byPartner[r.Endpoint.PartnerID], endpointBrief(r, dead[r.Endpoint.ID], now))
	}
	l := partners.List{ShowArchived: c.QueryParam("archived") == "1", CanOperate: principalOf(c).can(account.RoleOperator)}
	for _, p := range list {
		if p.ArchivedAt != nil && !l.ShowArchived {
			continue
		}
		l.Partners = append(l.Partners, partners.Summary{ID: p.ID, Name: p.Name, Contact: p.Contact, Archived: p.ArchivedAt != nil, Endpoints: byPartner[p.ID]})
	}
	return s.render(c, http.StatusOK, partners.ListPage(s.meta(c, "Partners", layout.NavPartners), l))
}

func endpointBrief(r db.EndpointListWithHealthRow, dead int64, now time.Time) partners.EndpointBrief {
	e, h := r.Endpoint, r.EndpointHealth
	b := partners.EndpointBrief{ID: e.ID, Name: e.Name, Kind: e.Kind, Host: endpointHost(e), P95: h.P95Ms, Dead: dead,
		Breaker: breakerData(e, h, now), Latency: latencyFlag(h)}
	if h.SampleCount < latency.MinSamples && h.RecentSampleCount < latency.MinSamples {
		b.Latency = ""
	}
	return b
}

// partnerPage: GET /partners/:id
func (s *Server) partnerPage(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	return s.partnerDetail(c, p, nil)
}

// partnerDetail renders a partner's page; access is its portal panel when
// the caller has it already (with a link shown once), else it is loaded.
func (s *Server) partnerDetail(c echo.Context, p db.Partner, access *partners.PortalAccess) error {
	ctx := c.Request().Context()
	rows, err := s.q.EndpointListWithHealth(ctx, &p.ID)
	if err != nil {
		return err
	}
	dd, err := s.q.EndpointDeadCounts(ctx, db.EndpointDeadCountsParams{CountCap: components.Counted + 1, PartnerID: &p.ID})
	if err != nil {
		return err
	}
	dead := map[int64]int64{}
	for _, r := range dd {
		dead[r.EndpointID] = r.Dead
	}
	d := partners.Detail{Notes: p.Notes, CreatedAt: p.CreatedAt, CanOperate: principalOf(c).can(account.RoleOperator), CSRF: principalOf(c).CSRF,
		Partner: partners.Summary{ID: p.ID, Name: p.Name, Contact: p.Contact, Archived: p.ArchivedAt != nil}}
	for _, r := range rows {
		d.Partner.Endpoints = append(d.Partner.Endpoints, endpointBrief(r, dead[r.Endpoint.ID], s.now()))
	}
	if access == nil {
		a, err := s.portalAccess(ctx, c, p)
		if err != nil {
			return err
		}
		access = &a
	}
	d.Portal = *access
	if d.Contacts, err = s.contactsPanel(ctx, c, p.ID); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, partners.DetailPage(s.meta(c, p.Name, layout.NavPartners), d))
}

// partnerNew: GET /partners/new (operator)
func (s *Server) partnerNew(c echo.Context) error {
	return s.render(c, http.StatusOK, partners.FormPage(s.meta(c, "New partner", layout.NavPartners), partners.Form{CSRF: principalOf(c).CSRF}))
}

// partnerEdit: GET /partners/:id/edit (operator)
func (s *Server) partnerEdit(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	f := partners.Form{ID: p.ID, Name: p.Name, Contact: p.Contact, Notes: p.Notes, CSRF: principalOf(c).CSRF}
	return s.render(c, http.StatusOK, partners.FormPage(s.meta(c, "Edit "+p.Name, layout.NavPartners), f))
}

// partnerSave: POST /partners (create) and POST /partners/:id (edit).
// Invalid input is answered 422 with the form and its errors; nothing is
// written.
func (s *Server) partnerSave(c echo.Context) error {
	var id int64
	if c.Param("id") != "" {
		var err error
		if id, err = pathID(c, "partner"); err != nil {
			return err
		}
	}
	in, errs := validatePartner(partnerInput{Name: c.FormValue("name"), Contact: c.FormValue("contact"), Notes: c.FormValue("notes")})
	f := partners.Form{ID: id, Name: in.Name, Contact: in.Contact, Notes: in.Notes, CSRF: principalOf(c).CSRF, Errors: map[string]string{}}
	for _, e := range errs {
		f.Errors[e.Field] = e.Message
	}
	ctx := c.Request().Context()
	var saved db.Partner
	if len(errs) == 0 {
		var err error
		if id == 0 {
			saved, err = s.createPartner(ctx, in, principalOf(c).actor())
		} else {
			saved, err = s.editPartner(ctx, id, principalOf(c).actor(), func(db.Partner) (partnerInput, error) { return in, nil })
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.Field != "" {
			f.Errors[ae.Field] = ae.Message
		} else if err != nil {
			return err
		}
	}
	if len(f.Errors) > 0 {
		if isHTMX(c) {
			return s.render(c, http.StatusUnprocessableEntity, partners.FormFragment(f))
		}
		return s.render(c, http.StatusUnprocessableEntity, partners.FormPage(s.meta(c, "Partner", layout.NavPartners), f))
	}
	if id == 0 {
		s.addFlash(c, layout.FlashSuccess, "Partner "+saved.Name+" created. Now add its first endpoint.")
	} else {
		s.addFlash(c, layout.FlashSuccess, "Partner saved.")
	}
	return redirectAfterPost(c, "/partners/"+strconv.FormatInt(saved.ID, 10))
}

// partnerArchive: POST /partners/:id/archive (operator) — archived partners'
// endpoints get no new deliveries; nothing is deleted.
func (s *Server) partnerArchive(c echo.Context) error {
	id, err := pathID(c, "partner")
	if err != nil {
		return err
	}
	archive := c.FormValue("archived") != "false"
	ctx := c.Request().Context()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		p, err := q.PartnerSetArchived(ctx, db.PartnerSetArchivedParams{ID: id, Archived: archive})
		if err != nil {
			return missing(err, "partner")
		}
		action := "partner.unarchive"
		details := map[string]any{"name": p.Name}
		if archive {
			action = "partner.archive"
			// An archived partner's portal access ends with it.
			sessions, links, err := revokePortal(ctx, q, p.ID)
			if err != nil {
				return err
			}
			details["portal_sessions_ended"], details["portal_links_revoked"] = sessions, links
		}
		return audit(ctx, q, principalOf(c).actor(), action, "partner", p.ID, details)
	})
	if err != nil {
		return err
	}
	if archive {
		s.addFlash(c, layout.FlashInfo, "Partner archived: its endpoints receive no new deliveries.")
	} else {
		s.addFlash(c, layout.FlashSuccess, "Partner unarchived.")
	}
	return redirectAfterPost(c, "/partners/"+strconv.FormatInt(id, 10))
}
