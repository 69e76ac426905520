package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/twofactor"
)

// Two-factor sign-in for dashboard users: a TOTP secret (sealed with the
// server's secret box) and ten one-time recovery codes (salted hashes).
// A password sign-in of a user with it on stops at a second step
// (dash_login_code.go); the account page (dash_account.go) turns it on and
// off; an admin resets it for a lost device (dash_users_2fa.go).

// Values of Config.Require2FA (HOOKLINE_REQUIRE_2FA): which roles must have
// two-factor sign-in. Each covers its role and every more privileged one.
const (
	Require2FANone     = ""
	Require2FAAdmin    = "admin"    // admins
	Require2FAOperator = "operator" // operators and admins
	Require2FAAll      = "all"      // everyone
)

// ValidRequire2FA reports whether v is one of the Require2FA values.
func ValidRequire2FA(v string) bool {
	switch v {
	case Require2FANone, Require2FAAdmin, Require2FAOperator, Require2FAAll:
		return true
	}
	return false
}

// twoFactorRequired reports whether a user of role must have two-factor
// sign-in under the server's Require2FA.
func (s *Server) twoFactorRequired(role string) bool {
	switch s.cfg.Require2FA {
	case Require2FAAdmin:
		return account.RoleAllows(role, account.RoleAdmin)
	case Require2FAOperator:
		return account.RoleAllows(role, account.RoleOperator)
	case Require2FAAll:
		return account.RoleAllows(role, account.RoleViewer)
	}
	return false
}

// enrolMessage is what a user who must set up two-factor sign-in is told.
const enrolMessage = "Your role needs two-factor sign-in: set it up here to use the rest of the dashboard."

// requireEnrolment keeps a signed-in user whose role needs two-factor
// sign-in, and who has not set it up, on the account page (where they set
// it up) and the logout until they have: page loads are sent to /account
// with a message, htmx requests get HX-Redirect, anything else a 403. It
// runs after requireSession; static assets are outside the dashboard group.
// The lookup costs one primary-key read, and only for covered roles.
func (s *Server) requireEnrolment(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principalOf(c)
		if p == nil || p.SSO || !s.twoFactorRequired(p.Role) || enrolmentPath(c.Path()) {
			return next(c)
		}
		on, err := s.q.UserTOTPEnabled(c.Request().Context(), p.UserID)
		if err != nil {
			return fmt.Errorf("two-factor status: %w", err)
		}
		if on {
			return next(c)
		}
		r := c.Request()
		if r.Method == http.MethodGet && !isHTMX(c) {
			s.addFlash(c, layout.FlashInfo, enrolMessage)
			return c.Redirect(http.StatusSeeOther, accountPath)
		}
		if isHTMX(c) {
			c.Response().Header().Set("HX-Redirect", accountPath)
		}
		return &apiError{http.StatusForbidden, "two_factor_required", enrolMessage, ""}
	}
}

// accountPath is the signed-in user's own page.
const accountPath = "/account"

// enrolmentPath reports whether a route stays open to a user who must
// still set up two-factor sign-in.
func enrolmentPath(route string) bool {
	return route == accountPath || strings.HasPrefix(route, accountPath+"/") || route == "/logout"
}

// errWrongCode is a second factor that did not check out: a wrong, used or
// replayed code, or none set up. The caller counts it against the sign-in
// throttle.
var errWrongCode = errors.New("wrong two-factor code")

// checkSecondFactor checks a typed code of a user with two-factor sign-in
// on: a TOTP code for a time step later than the last one accepted (which
// it records), or an unused recovery code (which it burns). Run it in the
// transaction of the change it allows, so both commit or neither. It
// returns which kind was used ("totp" or "recovery_code"), for the audit.
func (s *Server) checkSecondFactor(ctx context.Context, q *db.Queries, userID int64, typed string) (string, error) {
	kind, code := twofactor.Normalize(typed)
	if kind == twofactor.Invalid {
		return "", errWrongCode
	}
	row, err := q.UserTOTPGet(ctx, userID)
	if db.NoRows(err) || (err == nil && row.EnabledAt == nil) {
		return "", errWrongCode
	}
	if err != nil {
		return "", fmt.Errorf("load two-factor secret: %w", err)
	}
	if kind == twofactor.TOTP {
		secret, err := s.box.OpenTOTP(userID, row.Secret)
		if err != nil {
			return "", fmt.Errorf("open two-factor secret of user %d: %w", userID, err)
		}
		step, ok := twofactor.Match(string(secret), code, s.now())
		if !ok {
			return "", errWrongCode
		}
		n, err := q.UserTOTPUseStep(ctx, db.UserTOTPUseStepParams{UserID: userID, Step: step})
		if err != nil {
			return "", fmt.Errorf("record two-factor step: %w", err)
		}
		if n == 0 {
			return "", errWrongCode // replayed, or an older code after a newer one
		}
		return "totp", nil
	}
	codes, err := q.UserRecoveryCodesUnused(ctx, userID)
	if err != nil {
		return "", fmt.Errorf("load recovery codes: %w", err)
	}
	for _, rc := range codes {
		if !twofactor.RecoveryMatches(twofactor.Hashed{Salt: rc.Salt, Hash: rc.CodeHash}, code) {
			continue
		}
		n, err := q.UserRecoveryCodeUse(ctx, db.UserRecoveryCodeUseParams{ID: rc.ID, UserID: userID})
		if err != nil {
			return "", fmt.Errorf("use recovery code: %w", err)
		}
		if n == 1 {
			return "recovery_code", nil
		}
	}
	return "", errWrongCode
}

// newRecoveryCodes makes a fresh set of recovery codes for a user,
// replacing the old ones, and returns them to be shown once.
func newRecoveryCodes(ctx context.Context, q *db.Queries, userID int64) ([]string, error) {
	codes, err := twofactor.NewRecoveryCodes()
	if err != nil {
		return nil, err
	}
	p := db.UserRecoveryCodesReplaceParams{UserID: userID}
	for _, c := range codes {
		h, err := twofactor.HashRecoveryCode(c)
		if err != nil {
			return nil, err
		}
		p.Salts = append(p.Salts, h.Salt)
		p.Hashes = append(p.Hashes, h.Hash)
	}
	if err := q.UserRecoveryCodesReplace(ctx, p); err != nil {
		return nil, fmt.Errorf("store recovery codes: %w", err)
	}
	return codes, nil
}
