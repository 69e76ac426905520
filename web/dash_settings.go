package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/settings"
	"github.com/hookline/hookline/web/account"
)

// apiKeysPage: GET /settings/api-keys (admin)
func (s *Server) apiKeysPage(c echo.Context) error {
	return s.renderAPIKeys(c, http.StatusOK, settings.APIKeys{Scope: account.ScopeAdmin})
}

func (s *Server) renderAPIKeys(c echo.Context, status int, p settings.APIKeys) error {
	ctx := c.Request().Context()
	rows, err := s.q.APIKeyList(ctx)
	if err != nil {
		return err
	}
	partners, err := s.q.PartnerList(ctx)
	if err != nil {
		return err
	}
	m, name, key := s.settingsMeta(c, "API keys", onceAPIKey)
	p.NewName, p.NewKey = name, key
	p.Now, p.CSRF = s.now(), principalOf(c).CSRF
	for _, r := range rows {
		p.Keys = append(p.Keys, settings.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, CreatedBy: r.CreatedBy,
			CreatedAt: r.CreatedAt, LastUsed: r.LastUsedAt, Revoked: r.RevokedAt, Scope: r.Scope, Partner: deref(r.PartnerName)})
	}
	for _, pr := range partners {
		if pr.ArchivedAt == nil {
			p.Partners = append(p.Partners, components.Option{Value: strconv.FormatInt(pr.ID, 10), Label: pr.Name})
		}
	}
	return s.render(c, status, settings.APIKeysPage(m, p))
}

// apiKeyCreate: POST /settings/api-keys (admin) — the key is in this
// response only. name, scope (admin when empty) and partner (an id, or
// empty for none).
func (s *Server) apiKeyCreate(c echo.Context) error {
	ctx := c.Request().Context()
	form := settings.APIKeys{Name: c.FormValue("name"), Scope: c.FormValue("scope"), Partner: strings.TrimSpace(c.FormValue("partner"))}
	spec := account.APIKeySpec{Name: form.Name, Scope: form.Scope, CreatedBy: principalOf(c).Email}
	var key string
	var row db.APIKeyCreateRow
	err := func() error {
		if form.Partner != "" {
			id, err := strconv.ParseInt(form.Partner, 10, 64)
			if err != nil || id <= 0 {
				return &account.FieldError{Field: "partner", Message: "must be a partner id (a positive integer)"}
			}
			spec.PartnerID = &id
		}
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			key, row, err = account.CreateScopedAPIKey(ctx, tx, spec)
			if err != nil {
				return err
			}
			return audit(ctx, s.q.WithTx(tx), principalOf(c).actor(), "api_key.create", "api_key", row.ID, apiKeyAuditDetails(row.Name, row.Prefix, row.Scope, row.PartnerID))
		})
	}()
	var fe *account.FieldError
	if errors.As(err, &fe) {
		if form.Scope == "" {
			form.Scope = account.ScopeAdmin
		}
		form.Errors = map[string]string{fe.Field: fe.Message}
		return s.renderAPIKeys(c, http.StatusUnprocessableEntity, form)
	}
	if err != nil {
		return err
	}
	// Post/redirect/get, so a reload cannot create a second key; the key
	// rides in the encrypted one-time cookie and is shown once.
	s.addOnce(c, onceAPIKey, row.Name, key)
	return redirectAfterPost(c, "/settings/api-keys")
}

// apiKeyAuditDetails names a key in the audit log by what it may do; never
// its value.
func apiKeyAuditDetails(name, prefix, scope string, partnerID *int64) map[string]any {
	d := map[string]any{"name": name, "prefix": prefix, "scope": scope}
	if partnerID != nil {
		d["partner_id"] = *partnerID
	}
	return d
}

// apiKeyRevoke: POST /settings/api-keys/:id/revoke (admin)
func (s *Server) apiKeyRevoke(c echo.Context) error {
	id, err := pathID(c, "API key")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := q.APIKeyRevoke(ctx, id)
		if err != nil {
			return missing(err, "active API key")
		}
		return audit(ctx, q, principalOf(c).actor(), "api_key.revoke", "api_key", row.ID, apiKeyAuditDetails(row.Name, row.Prefix, row.Scope, row.PartnerID))
	})
	if err != nil {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "API key revoked: requests using it are refused.")
	return redirectAfterPost(c, "/settings/api-keys")
}

// usersPage: GET /settings/users (admin)
func (s *Server) usersPage(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, settings.Users{Role: account.RoleOperator})
}

func (s *Server) renderUsers(c echo.Context, status int, p settings.Users) error {
	rows, err := s.q.UserList(c.Request().Context())
	if err != nil {
		return err
	}
	me := principalOf(c)
	m, email, password := s.settingsMeta(c, "Users", onceUserPassword)
	p.NewEmail, p.NewPassword = email, password
	p.Now, p.CSRF = s.now(), me.CSRF
	twoFactor, err := s.twoFactorUsers(c)
	if err != nil {
		return err
	}
	for _, u := range rows {
		p.Users = append(p.Users, settings.User{ID: u.ID, Email: u.Email, Role: u.Role, Disabled: u.DisabledAt != nil, LastLogin: u.LastLoginAt, Self: u.ID == me.UserID,
			TwoFactor: twoFactor[u.ID]})
	}
	return s.render(c, status, settings.UsersPage(m, p))
}

// userAdd: POST /settings/users (admin)
func (s *Server) userAdd(c echo.Context) error {
	ctx := c.Request().Context()
	email, role := strings.TrimSpace(c.FormValue("email")), c.FormValue("role")
	var generated string
	var u db.User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		u, generated, err = account.AddUser(ctx, tx, email, role, c.FormValue("password"))
		if err != nil {
			return err
		}
		return audit(ctx, s.q.WithTx(tx), principalOf(c).actor(), "user.add", "user", u.ID, map[string]any{"email": u.Email, "role": u.Role})
	})
	var fe *account.FieldError
	if errors.As(err, &fe) {
		return s.renderUsers(c, http.StatusUnprocessableEntity, settings.Users{Email: email, Role: role, Errors: map[string]string{fe.Field: fe.Message}})
	}
	if err != nil {
		return err
	}
	if generated == "" {
		s.addFlash(c, layout.FlashSuccess, u.Email+" added.")
	} else {
		s.addOnce(c, onceUserPassword, u.Email, generated)
	}
	return redirectAfterPost(c, "/settings/users")
}

// errLastAdmin protects the installation from locking itself out.
var errLastAdmin = &apiError{http.StatusConflict, "last_admin", "this is the last active admin: make someone else admin first", "user"}

// userSetRole: POST /settings/users/:id/role (admin)
func (s *Server) userSetRole(c echo.Context) error {
	return s.changeUser(c, "user.role", func(q *db.Queries, u db.User) error {
		role := c.FormValue("role")
		if !account.ValidRole(role) {
			return invalidField("role", "must be admin, operator or viewer")
		}
		if u.Role == account.RoleAdmin && role != account.RoleAdmin && u.DisabledAt == nil {
			if err := lastAdminCheck(c, q); err != nil {
				return err
			}
		}
		_, err := q.UserSetRole(c.Request().Context(), db.UserSetRoleParams{ID: u.ID, Role: role})
		return err
	})
}

// userSetDisabled: POST /settings/users/:id/disable (admin)
func (s *Server) userSetDisabled(c echo.Context) error {
	return s.changeUser(c, "user.disable", func(q *db.Queries, u db.User) error {
		disable := c.FormValue("disabled") != "false"
		if disable && u.Role == account.RoleAdmin && u.DisabledAt == nil {
			if err := lastAdminCheck(c, q); err != nil {
				return err
			}
		}
		_, err := q.UserSetDisabled(c.Request().Context(), db.UserSetDisabledParams{ID: u.ID, Disabled: disable})
		return err
	})
}

func lastAdminCheck(c echo.Context, q *db.Queries) error {
	n, err := q.UserCountActiveAdmins(c.Request().Context())
	if err != nil {
		return err
	}
	if n <= 1 {
		return errLastAdmin
	}
	return nil
}

// changeUser applies a change to a user in a transaction, ends the user's
// sessions (a new role or a disabled account takes effect at once), and
// audits it.
func (s *Server) changeUser(c echo.Context, action string, change func(*db.Queries, db.User) error) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		u, err := q.UserGet(ctx, id)
		if err != nil {
			return missing(err, "user")
		}
		if err := change(q, u); err != nil {
			return err
		}
		if err := q.UserSessionDeleteForUser(ctx, id); err != nil {
			return err
		}
		return audit(ctx, q, principalOf(c).actor(), action, "user", id, map[string]any{"email": u.Email, "role": c.FormValue("role"), "disabled": c.FormValue("disabled")})
	})
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < 500 {
		return s.renderUsers(c, ae.Status, settings.Users{Role: account.RoleOperator, Errors: map[string]string{"user": ae.Message}})
	}
	if err != nil {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "User updated.")
	return redirectAfterPost(c, "/settings/users")
}
