package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/account"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/twofactor"
)

// The account page: any signed-in user's own two-factor sign-in. Secrets
// and recovery codes travel from the POST that makes them to the page after
// its redirect in the encrypted one-time flash cookie (as new API keys do),
// so they are shown once and a reload shows them no more.
const (
	onceTOTPSecret    = "once_totp_secret"
	onceRecoveryCodes = "once_recovery_codes"
)

// accountPage: GET /account (any role)
func (s *Server) accountPage(c echo.Context) error {
	return s.renderAccount(c, http.StatusOK, account.Page{})
}

func (s *Server) renderAccount(c echo.Context, status int, p account.Page) error {
	me := principalOf(c)
	ctx := c.Request().Context()
	row, err := s.q.UserTOTPGet(ctx, me.UserID)
	if err != nil && !db.NoRows(err) {
		return fmt.Errorf("load two-factor status: %w", err)
	}
	p.Email, p.Role, p.CSRF = me.Email, me.Role, me.CSRF
	p.Required = s.twoFactorRequired(me.Role)
	p.Enabled = err == nil && row.EnabledAt != nil
	p.Pending = err == nil && row.EnabledAt == nil
	if p.Enabled {
		n, err := s.q.UserRecoveryCodesLeft(ctx, me.UserID)
		if err != nil {
			return fmt.Errorf("count recovery codes: %w", err)
		}
		p.RecoveryLeft = int(n)
	}
	m := s.meta(c, "Your account", "")
	if v, ok := takeOnce(&m, onceTOTPSecret); ok && p.Pending {
		if p.Setup, err = totpSetupView(v, me.Email); err != nil {
			return err
		}
	}
	if v, ok := takeOnce(&m, onceRecoveryCodes); ok && p.Enabled {
		p.RecoveryCodes = strings.Fields(v)
	}
	return s.render(c, status, account.AccountPage(m, p))
}

// totpSetupView is the enrolment's QR code (of the otpauth:// URI) and
// the secret to type.
func totpSetupView(secret, email string) (*account.Setup, error) {
	uri, err := twofactor.KeyURI(secret, email)
	if err != nil {
		return nil, err
	}
	qr, err := twofactor.NewQR(uri)
	if err != nil {
		return nil, err
	}
	return &account.Setup{Secret: account.GroupSecret(secret), QRSize: qr.Size, QRPath: qr.Path}, nil
}

// errTwoFactorOn refuses a new enrolment over one that is on: turning it
// off (with a code) comes first, so a borrowed session cannot swap the
// authenticator.
var errTwoFactorOn = conflict("code", "two-factor sign-in is already on; turn it off first to set up another app")

// totpSetup: POST /account/2fa/setup — a new secret, sealed, waiting for
// its first code.
func (s *Server) totpSetup(c echo.Context) error {
	me := principalOf(c)
	ctx := c.Request().Context()
	secret, err := twofactor.NewSecret()
	if err != nil {
		return err
	}
	sealed, err := s.box.SealTOTP(me.UserID, []byte(secret))
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		n, err := q.UserTOTPBegin(ctx, db.UserTOTPBeginParams{UserID: me.UserID, Secret: sealed})
		if err != nil {
			return fmt.Errorf("begin two-factor enrolment: %w", err)
		}
		if n == 0 {
			return errTwoFactorOn
		}
		return audit(ctx, q, me.actor(), "user.2fa.setup", "user", me.UserID, map[string]any{"email": me.Email})
	})
	if err != nil {
		return err
	}
	s.addFlash(c, onceTOTPSecret, secret)
	return redirectAfterPost(c, accountPath)
}

// totpEnable: POST /account/2fa/enable — the first right code turns
// two-factor sign-in on and makes the recovery codes.
func (s *Server) totpEnable(c echo.Context) error {
	me := principalOf(c)
	ctx := c.Request().Context()
	var codes []string
	ok, err := s.withCode(c, "enable", func(q *db.Queries) error {
		row, err := q.UserTOTPGet(ctx, me.UserID)
		if db.NoRows(err) {
			return invalidField("code", "set up two-factor sign-in first")
		}
		if err != nil {
			return fmt.Errorf("load two-factor enrolment: %w", err)
		}
		if row.EnabledAt != nil {
			return errTwoFactorOn
		}
		secret, err := s.box.OpenTOTP(me.UserID, row.Secret)
		if err != nil {
			return fmt.Errorf("open two-factor secret of user %d: %w", me.UserID, err)
		}
		kind, code := twofactor.Normalize(c.FormValue("code"))
		step, matched := twofactor.Match(string(secret), code, s.now())
		if kind != twofactor.TOTP || !matched {
			return errWrongCode
		}
		n, err := q.UserTOTPEnable(ctx, db.UserTOTPEnableParams{UserID: me.UserID, Secret: row.Secret, Step: step})
		if err != nil {
			return fmt.Errorf("enable two-factor: %w", err)
		}
		if n == 0 {
			return errWrongCode // restarted in another tab meanwhile
		}
		if codes, err = newRecoveryCodes(ctx, q, me.UserID); err != nil {
			return err
		}
		return audit(ctx, q, me.actor(), "user.2fa.enable", "user", me.UserID, map[string]any{"email": me.Email})
	})
	if !ok {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "Two-factor sign-in is on.")
	s.addFlash(c, onceRecoveryCodes, strings.Join(codes, " "))
	return redirectAfterPost(c, accountPath)
}

// totpDisable: POST /account/2fa/disable — with a code from the app or a
// recovery code.
func (s *Server) totpDisable(c echo.Context) error {
	me := principalOf(c)
	ctx := c.Request().Context()
	ok, err := s.withCode(c, "disable", func(q *db.Queries) error {
		used, err := s.checkSecondFactor(ctx, q, me.UserID, c.FormValue("code"))
		if err != nil {
			return err
		}
		if err := removeTwoFactor(ctx, q, me.UserID); err != nil {
			return err
		}
		return audit(ctx, q, me.actor(), "user.2fa.disable", "user", me.UserID, map[string]any{"email": me.Email, "with": used})
	})
	if !ok {
		return err
	}
	s.addFlash(c, layout.FlashSuccess, "Two-factor sign-in is off: you sign in with your password alone.")
	return redirectAfterPost(c, accountPath)
}

// totpRecoveryCodes: POST /account/2fa/recovery-codes — new codes in
// place of the old, with a code.
func (s *Server) totpRecoveryCodes(c echo.Context) error {
	me := principalOf(c)
	ctx := c.Request().Context()
	var codes []string
	ok, err := s.withCode(c, "recovery", func(q *db.Queries) error {
		used, err := s.checkSecondFactor(ctx, q, me.UserID, c.FormValue("code"))
		if err != nil {
			return err
		}
		if codes, err = newRecoveryCodes(ctx, q, me.UserID); err != nil {
			return err
		}
		return audit(ctx, q, me.actor(), "user.2fa.recovery_codes", "user", me.UserID, map[string]any{"email": me.Email, "with": used})
	})
	if !ok {
		return err
	}
	s.addFlash(c, onceRecoveryCodes, strings.Join(codes, " "))
	return redirectAfterPost(c, accountPath)
}

// withCode runs a change that a typed code allows in one transaction,
// behind the sign-in throttle (a signed-in session is not a licence to
// guess codes): a wrong code counts as a failed sign-in of the account and
// the address, and the page comes back with the error on the form's field.
// It reports whether the change was made; when not, the answer is written
// or err says what went wrong.
func (s *Server) withCode(c echo.Context, form string, change func(*db.Queries) error) (bool, error) {
	me := principalOf(c)
	key, ip := throttleKey(me.Email), c.RealIP()
	// The attempt is taken before the code is checked, and given back
	// unless the code was wrong, as at sign-in.
	attempt, wait := s.throttle.take(key, ip, s.now())
	if attempt == nil {
		c.Response().Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		return false, s.renderAccount(c, http.StatusTooManyRequests, account.Page{Form: form,
			Error: fmt.Sprintf("Too many failed attempts. Try again in %s.", humanWait(wait))})
	}
	ctx := c.Request().Context()
	s.throttle.evaluations.Add(1)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return change(s.q.WithTx(tx)) })
	if !errors.Is(err, errWrongCode) {
		attempt.GiveBack(s.now())
	}
	var ae *apiError
	switch {
	case errors.Is(err, errWrongCode):
		s.log.Info("wrong two-factor code on the account page", "remote_ip", ip)
		return false, s.renderAccount(c, http.StatusUnprocessableEntity, account.Page{Form: form,
			Error: "Wrong code. Enter the code your app shows now (each code works once)."})
	case errors.As(err, &ae) && ae.Status < 500:
		return false, s.renderAccount(c, ae.Status, account.Page{Form: form, Error: capitalize(ae.Message) + "."})
	}
	return err == nil, err
}

// removeTwoFactor turns a user's two-factor sign-in off: the secret and
// every recovery code go. It reports nothing when there was none.
func removeTwoFactor(ctx context.Context, q *db.Queries, userID int64) error {
	if _, err := q.UserTOTPDelete(ctx, userID); err != nil {
		return fmt.Errorf("delete two-factor secret: %w", err)
	}
	if err := q.UserRecoveryCodesDelete(ctx, userID); err != nil {
		return fmt.Errorf("delete recovery codes: %w", err)
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
