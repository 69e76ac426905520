package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// Alike in shape to cluster (deadletters.go) by chance: a partner's own wire format.
type partnerJSON struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Contact       string     `json:"contact"`
	Notes         string     `json:"notes"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	ArchivedAt    *time.Time `json:"archived_at"`
	EndpointCount *int64     `json:"endpoint_count,omitempty"`
	// PortalManageEndpoints: in its portal the partner may create
	// endpoints, disable and enable them and change their event types.
	PortalManageEndpoints bool `json:"portal_manage_endpoints"`
}

func partnerView(p db.Partner) partnerJSON {
	return partnerJSON{ID: p.ID, Name: p.Name, Contact: p.Contact, Notes: p.Notes,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, ArchivedAt: p.ArchivedAt, PortalManageEndpoints: p.PortalManageEndpoints}
}

// apiPartnerCreate: POST /api/v1/partners
func (s *Server) apiPartnerCreate(c echo.Context) error {
	var in partnerInput
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	in, errs := validatePartner(in)
	if len(errs) > 0 {
		return invalidField(errs[0].Field, errs[0].Message)
	}
	p, err := s.createPartner(c.Request().Context(), in, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, partnerView(p))
}

// apiPartnerPatch: PATCH /api/v1/partners/:id — changes the fields given
// (name, contact, notes, portal_manage_endpoints), each audited.
func (s *Server) apiPartnerPatch(c echo.Context) error {
	id, err := pathID(c, "partner")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	p, err := s.editPartner(c.Request().Context(), id, apiKeyOf(c).actor(), func(cur db.Partner) (partnerInput, error) {
		in := partnerInput{Name: cur.Name, Contact: cur.Contact, Notes: cur.Notes}
		return in, decodeStrict(body, &in)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, partnerView(p))
}

// apiPartnerList: GET /api/v1/partners
func (s *Server) apiPartnerList(c echo.Context) error {
	rows, err := s.q.PartnerList(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]partnerJSON, 0, len(rows))
	for _, r := range rows {
		v := partnerView(db.Partner{ID: r.ID, Name: r.Name, Contact: r.Contact, Notes: r.Notes,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ArchivedAt: r.ArchivedAt, PortalManageEndpoints: r.PortalManageEndpoints})
		n := r.EndpointCount
		v.EndpointCount = &n
		out = append(out, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"partners": out})
}

// apiPartnerGet: GET /api/v1/partners/:id
func (s *Server) apiPartnerGet(c echo.Context) error {
	p, err := s.partnerFromPath(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, partnerView(p))
}
