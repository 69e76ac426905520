package web

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

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

type partnerInput struct {
	Name    string `json:"name"`
	Contact string `json:"contact"`
	Notes   string `json:"notes"`
	// PortalManageEndpoints is optional (absent: unchanged, false when
	// creating).
	PortalManageEndpoints *bool `json:"portal_manage_endpoints"`
}

func validatePartner(in partnerInput) (partnerInput, []fieldError) {
	var errs []fieldError
	in.Name = strings.TrimSpace(in.Name)
	in.Contact = strings.TrimSpace(in.Contact)
	switch {
	case in.Name == "":
		errs = append(errs, fieldError{"name", "is required"})
	case utf8.RuneCountInString(in.Name) > 200:
		errs = append(errs, fieldError{"name", "must be at most 200 characters"})
	}
	if utf8.RuneCountInString(in.Contact) > 500 {
		errs = append(errs, fieldError{"contact", "must be at most 500 characters"})
	}
	if utf8.RuneCountInString(in.Notes) > 10000 {
		errs = append(errs, fieldError{"notes", "must be at most 10000 characters"})
	}
	return in, errs
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
	ctx := c.Request().Context()
	var p db.Partner
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		p, err = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: in.Name, Contact: in.Contact, Notes: in.Notes})
		if isUniqueViolation(err) {
			return conflict("name", "a partner with this name already exists")
		}
		if err != nil {
			return err
		}
		if err := audit(ctx, q, apiKeyOf(c).actor(), "partner.create", "partner", p.ID, map[string]any{"name": p.Name}); err != nil {
			return err
		}
		if in.PortalManageEndpoints == nil || !*in.PortalManageEndpoints {
			return nil
		}
		if p, err = q.PartnerSetPortalManage(ctx, db.PartnerSetPortalManageParams{ID: p.ID, Allowed: true}); err != nil {
			return err
		}
		return audit(ctx, q, apiKeyOf(c).actor(), "partner.portal_manage_endpoints", "partner", p.ID, map[string]any{"name": p.Name, "allowed": true})
	})
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
	ctx := c.Request().Context()
	actor := apiKeyOf(c).actor()
	var p db.Partner
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		cur, err := q.PartnerGetForUpdate(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("partner")
		}
		if err != nil {
			return err
		}
		in := partnerInput{Name: cur.Name, Contact: cur.Contact, Notes: cur.Notes}
		if err := decodeStrict(body, &in); err != nil {
			return err
		}
		in, errs := validatePartner(in)
		if len(errs) > 0 {
			return invalidField(errs[0].Field, errs[0].Message)
		}
		p = cur
		if in.Name != cur.Name || in.Contact != cur.Contact || in.Notes != cur.Notes {
			p, err = q.PartnerUpdate(ctx, db.PartnerUpdateParams{ID: id, Name: in.Name, Contact: in.Contact, Notes: in.Notes})
			if isUniqueViolation(err) {
				return conflict("name", "a partner with this name already exists")
			}
			if err != nil {
				return err
			}
			if err := audit(ctx, q, actor, "partner.update", "partner", p.ID, map[string]any{"name": p.Name}); err != nil {
				return err
			}
		}
		if m := in.PortalManageEndpoints; m != nil && *m != cur.PortalManageEndpoints {
			if p, err = q.PartnerSetPortalManage(ctx, db.PartnerSetPortalManageParams{ID: id, Allowed: *m}); err != nil {
				return err
			}
			return audit(ctx, q, actor, "partner.portal_manage_endpoints", "partner", p.ID, map[string]any{"name": p.Name, "allowed": *m})
		}
		return nil
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

// partnerFromPath loads the partner named by the :id path parameter, or a 404.
func (s *Server) partnerFromPath(c echo.Context) (db.Partner, error) {
	id, err := pathID(c, "partner")
	if err != nil {
		return db.Partner{}, err
	}
	p, err := s.q.PartnerGet(c.Request().Context(), id)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Partner{}, notFound("partner")
	}
	return p, err
}

// pathID parses the :id path parameter; a malformed id is a 404 like an
// unknown one (ids are not user-chosen).
func pathID(c echo.Context, what string) (int64, error) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return 0, notFound(what)
	}
	return id, nil
}
