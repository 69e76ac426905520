package web

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hookline/hookline/db"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// Partners: validation and the operations the API and the dashboard share.

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

// partnerFromPath loads the partner named by the :id path parameter, or a 404.
func (s *Server) partnerFromPath(c echo.Context) (db.Partner, error) {
	id, err := pathID(c, "partner")
	if err != nil {
		return db.Partner{}, err
	}
	p, err := s.q.PartnerGet(c.Request().Context(), id)
	if err != nil {
		return db.Partner{}, missing(err, "partner")
	}
	return p, nil
}

// createPartner stores a validated partner, audited; in.PortalManageEndpoints
// set lets its portal create and delete endpoints from the start.
func (s *Server) createPartner(ctx context.Context, in partnerInput, actor string) (db.Partner, error) {
	var p db.Partner
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		p, err = q.PartnerCreate(ctx, db.PartnerCreateParams{Name: in.Name, Contact: in.Contact, Notes: in.Notes})
		if db.IsUniqueViolation(err) {
			return errPartnerNameTaken
		}
		if err != nil {
			return fmt.Errorf("create partner: %w", err)
		}
		if err := audit(ctx, q, actor, "partner.create", "partner", p.ID, map[string]any{"name": p.Name}); err != nil {
			return err
		}
		if in.PortalManageEndpoints == nil || !*in.PortalManageEndpoints {
			return nil
		}
		p, err = setPortalManage(ctx, q, p, true, actor)
		return err
	})
	return p, err
}

// editPartner changes a partner under its row lock: build turns the stored
// partner into the new input (a PATCH body merged onto it, or a form), which
// is validated whole. Each kind of change is audited when something changed.
func (s *Server) editPartner(ctx context.Context, id int64, actor string, build func(cur db.Partner) (partnerInput, error)) (db.Partner, error) {
	var p db.Partner
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		cur, err := q.PartnerGetForUpdate(ctx, id)
		if err != nil {
			return missing(err, "partner")
		}
		in, err := build(cur)
		if err != nil {
			return err
		}
		in, errs := validatePartner(in)
		if len(errs) > 0 {
			return invalidField(errs[0].Field, errs[0].Message)
		}
		p = cur
		if in.Name != cur.Name || in.Contact != cur.Contact || in.Notes != cur.Notes {
			p, err = q.PartnerUpdate(ctx, db.PartnerUpdateParams{ID: id, Name: in.Name, Contact: in.Contact, Notes: in.Notes})
			if db.IsUniqueViolation(err) {
				return errPartnerNameTaken
			}
			if err != nil {
				return fmt.Errorf("update partner: %w", err)
			}
			if err := audit(ctx, q, actor, "partner.update", "partner", p.ID, map[string]any{"name": p.Name}); err != nil {
				return err
			}
		}
		if m := in.PortalManageEndpoints; m != nil && *m != cur.PortalManageEndpoints {
			p, err = setPortalManage(ctx, q, p, *m, actor)
		}
		return err
	})
	return p, err
}

// setPortalManage lets (or stops) p's portal create and delete endpoints,
// audited.
func setPortalManage(ctx context.Context, q *db.Queries, p db.Partner, allowed bool, actor string) (db.Partner, error) {
	p, err := q.PartnerSetPortalManage(ctx, db.PartnerSetPortalManageParams{ID: p.ID, Allowed: allowed})
	if err != nil {
		return p, fmt.Errorf("set portal_manage_endpoints: %w", err)
	}
	return p, audit(ctx, q, actor, "partner.portal_manage_endpoints", "partner", p.ID, map[string]any{"name": p.Name, "allowed": allowed})
}

var errPartnerNameTaken = conflict("name", "a partner with this name already exists")
