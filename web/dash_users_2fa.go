package web

import (
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/settings"
	"github.com/hookline/hookline/web/account"
)

// userTwoFactorReset: POST /settings/users/:id/2fa/reset (admin) — for a
// user who lost their authenticator and their recovery codes: their
// two-factor sign-in goes, and so do their sessions (the lost phone may
// hold one). They sign in with their password alone next time, and set it
// up again (at once, when their role needs it).
func (s *Server) userTwoFactorReset(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	if id == principalOf(c).UserID {
		return s.renderUsers(c, errResetSelf.Status, settings.Users{Role: account.RoleOperator, Errors: map[string]string{"user": errResetSelf.Message}})
	}
	ctx := c.Request().Context()
	var email string
	var had bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		u, err := q.UserGet(ctx, id)
		if err != nil {
			return missing(err, "user")
		}
		email = u.Email
		n, err := q.UserTOTPDelete(ctx, id)
		if err != nil {
			return fmt.Errorf("delete two-factor secret: %w", err)
		}
		if had = n > 0; !had {
			return nil
		}
		if err := removeTwoFactor(ctx, q, id); err != nil {
			return err
		}
		if err := q.UserSessionDeleteForUser(ctx, id); err != nil {
			return err
		}
		return audit(ctx, q, principalOf(c).actor(), "user.2fa.reset", "user", id, map[string]any{"email": u.Email})
	})
	if err != nil {
		return err
	}
	if had {
		s.addFlash(c, layout.FlashSuccess, "Two-factor sign-in reset for "+email+": they sign in with their password and set it up again.")
	} else {
		s.addFlash(c, layout.FlashInfo, email+" has no two-factor sign-in to reset.")
	}
	return redirectAfterPost(c, "/settings/users")
}

// errResetSelf: an admin's own two-factor sign-in is turned off on the
// account page, with a code, like anyone's; a session alone (perhaps a
// borrowed one) cannot drop it.
var errResetSelf = &apiError{http.StatusConflict, "conflict", "turn your own two-factor sign-in off on your account page, with a code", "user"}

// twoFactorUsers is the set of users with two-factor sign-in on, for the
// users page.
func (s *Server) twoFactorUsers(c echo.Context) (map[int64]bool, error) {
	ids, err := s.q.UserTOTPEnabledUsers(c.Request().Context())
	if err != nil {
		return nil, fmt.Errorf("list two-factor users: %w", err)
	}
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}
