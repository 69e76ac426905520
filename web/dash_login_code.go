package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/login"
	"github.com/hookline/hookline/web/account"
)

// The second sign-in step. After a right password for a user with
// two-factor sign-in on, no session starts: a pending sign-in goes into its
// own cookie (signed and encrypted like the login form's, so it cannot be
// forged or read), good for pendingSignInTTL, and the code page asks for a
// code. The cookie also carries the step's double-submit CSRF token. Only a
// right code starts the session.
const (
	pendingSignInCookie = "hookline_signin_2fa"
	pendingSignInTTL    = 5 * time.Minute
	loginCodePath       = "/login/code"
)

// pendingSignIn is a password sign-in waiting for its second factor.
type pendingSignIn struct {
	UserID int64
	Key    string // the throttle's account key (the email as typed, lower-cased)
	Next   string
	Token  string
}

// beginSecondFactor is called after a right password: for a user with
// two-factor sign-in on it stores a pending sign-in and reports true (the
// caller sends the browser to the code page instead of starting a session).
func (s *Server) beginSecondFactor(c echo.Context, u db.User, key, next string) (bool, error) {
	on, err := s.q.UserTOTPEnabled(c.Request().Context(), u.ID)
	if err != nil || !on {
		return false, err
	}
	sess := sessions.NewSession(s.sessions, pendingSignInCookie)
	sess.Values["uid"] = u.ID
	sess.Values["key"] = key
	sess.Values["next"] = next
	sess.Values["exp"] = s.now().Add(pendingSignInTTL).Unix()
	sess.Values["t"] = account.RandomToken(24)
	sess.Options = s.cookieOptions(c.Request(), int(pendingSignInTTL/time.Second))
	return true, sess.Save(c.Request(), c.Response())
}

// pendingOf reads the request's pending sign-in; false when there is none,
// it has expired, or the cookie does not verify.
func (s *Server) pendingOf(c echo.Context) (pendingSignIn, bool) {
	sess, err := s.sessions.Get(c.Request(), pendingSignInCookie)
	if err != nil {
		return pendingSignIn{}, false
	}
	p := pendingSignIn{}
	p.UserID, _ = sess.Values["uid"].(int64)
	p.Key, _ = sess.Values["key"].(string)
	p.Next, _ = sess.Values["next"].(string)
	p.Token, _ = sess.Values["t"].(string)
	exp, _ := sess.Values["exp"].(int64)
	if p.UserID == 0 || p.Token == "" || s.now().Unix() >= exp {
		return pendingSignIn{}, false
	}
	return p, true
}

func (s *Server) clearCookie(c echo.Context, name string) {
	gone := sessions.NewSession(s.sessions, name)
	gone.Options = s.cookieOptions(c.Request(), -1)
	_ = gone.Save(c.Request(), c.Response())
}

// loginCodePage: GET /login/code
func (s *Server) loginCodePage(c echo.Context) error {
	p, ok := s.pendingOf(c)
	if !ok {
		return c.Redirect(http.StatusSeeOther, "/login")
	}
	return s.renderLoginCode(c, http.StatusOK, login.CodeForm{Token: p.Token})
}

func (s *Server) renderLoginCode(c echo.Context, status int, f login.CodeForm) error {
	return s.render(c, status, login.CodePage(layout.PageMeta{Title: "Two-factor sign-in", Version: s.cfg.Version}, f))
}

// signInExpired: the pending sign-in is gone (expired, never started,
// or its user disabled); the password step starts again.
const signInExpired = "The sign-in expired. Please sign in again."

// loginCodeSubmit: POST /login/code — checks the step's CSRF token, the
// sign-in throttle (the same buckets as the password: per account and per
// address), then the code; a right one starts the session.
func (s *Server) loginCodeSubmit(c echo.Context) error {
	r := c.Request()
	p, ok := s.pendingOf(c)
	if !ok || subtle.ConstantTimeCompare([]byte(p.Token), []byte(c.FormValue("code_token"))) != 1 {
		return s.renderLogin(c, http.StatusForbidden, login.Form{Error: signInExpired})
	}
	form := login.CodeForm{Token: p.Token}
	ip := c.RealIP()
	// The attempt is taken before the code is checked, and given back
	// unless the code was wrong, as for the password.
	attempt, wait := s.throttle.take(p.Key, ip, s.now())
	if attempt == nil {
		c.Response().Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		form.Error = fmt.Sprintf("Too many failed attempts. Try again in %s.", humanWait(wait))
		return s.renderLoginCode(c, http.StatusTooManyRequests, form)
	}
	ctx := r.Context()
	var u db.User
	s.throttle.evaluations.Add(1)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		if u, err = q.UserGet(ctx, p.UserID); err != nil {
			return err
		}
		if u.DisabledAt != nil {
			return pgx.ErrNoRows
		}
		used, err := s.checkSecondFactor(ctx, q, u.ID, c.FormValue("code"))
		if err != nil || used != "recovery_code" {
			return err
		}
		// A recovery code is gone once used: the audit log says when.
		return audit(ctx, q, "user:"+u.Email, "user.recovery_code.use", "user", u.ID, map[string]any{"email": u.Email, "at": "sign-in"})
	})
	if !errors.Is(err, errWrongCode) {
		attempt.GiveBack(s.now())
	}
	switch {
	case db.NoRows(err):
		s.clearCookie(c, pendingSignInCookie)
		return s.renderLogin(c, http.StatusForbidden, login.Form{Error: signInExpired})
	case errors.Is(err, errWrongCode):
		s.log.Info("failed dashboard two-factor code", "remote_ip", ip)
		form.Error = "Wrong code. Enter the code your app shows now, or an unused recovery code."
		return s.renderLoginCode(c, http.StatusUnauthorized, form)
	case err != nil:
		return err
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	s.clearCookie(c, pendingSignInCookie)
	s.clearCookie(c, loginCookie)
	return c.Redirect(http.StatusSeeOther, safeNext(p.Next))
}

// throttleKey is the sign-in throttle's account key for a typed email.
func throttleKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
