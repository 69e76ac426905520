package web

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/login"
	"github.com/hookline/hookline/web/sso"
)

// Single sign-on through OpenID Connect. GET /login/oidc starts an attempt:
// its state, nonce and PKCE verifier go into a cookie of their own (signed
// and encrypted like the login form's, path /login/oidc, ten minutes), and
// the browser goes to the provider. GET /login/oidc/callback takes the
// cookie once (it is cleared whatever happens, so a callback cannot be
// replayed through it), checks the state, lets web/sso exchange the code and
// check the ID token, then finds or provisions the user (dash_oidc_user.go)
// and starts a session. Every refusal shows the login page with its reason.
const (
	oidcCookie     = "hookline_oidc"
	oidcCookiePath = "/login/oidc"
	oidcAttemptTTL = 10 * time.Minute
)

// oidcStart: GET /login/oidc
func (s *Server) oidcStart(c echo.Context) error {
	if s.sso == nil {
		return echo.ErrNotFound
	}
	r := c.Request()
	next := safeNext(c.QueryParam("next"))
	a := sso.NewAttempt()
	to, err := s.sso.AuthURL(r.Context(), a)
	if err != nil {
		return s.oidcFailed(c, next, err)
	}
	sess := sessions.NewSession(s.sessions, oidcCookie)
	sess.Values["state"] = a.State
	sess.Values["nonce"] = a.Nonce
	sess.Values["verifier"] = a.Verifier
	sess.Values["next"] = next
	sess.Values["at"] = s.now().Unix()
	sess.Options = s.oidcCookieOptions(r, int(oidcAttemptTTL/time.Second))
	if err := sess.Save(r, c.Response()); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusSeeOther, to)
}

// oidcCallback: GET /login/oidc/callback
func (s *Server) oidcCallback(c echo.Context) error {
	if s.sso == nil {
		return echo.ErrNotFound
	}
	r := c.Request()
	c.Response().Header().Set("Cache-Control", "no-store")
	sess, err := s.sessions.Get(r, oidcCookie)
	gone := sessions.NewSession(s.sessions, oidcCookie)
	gone.Options = s.oidcCookieOptions(r, -1)
	if err := gone.Save(r, c.Response()); err != nil {
		return err
	}
	state, _ := sess.Values["state"].(string)
	a := sso.Attempt{State: state}
	a.Nonce, _ = sess.Values["nonce"].(string)
	a.Verifier, _ = sess.Values["verifier"].(string)
	next, _ := sess.Values["next"].(string)
	next = safeNext(next)
	at, _ := sess.Values["at"].(int64)
	got := c.QueryParam("state")
	switch {
	case err != nil || state == "" || a.Nonce == "" || a.Verifier == "":
		return s.oidcFailed(c, next, &sso.Refusal{Reason: "no sign-in attempt cookie", Message: "This sign-in was not started here, or was already used. Please sign in again."})
	case s.now().Sub(time.Unix(at, 0)) > oidcAttemptTTL:
		return s.oidcFailed(c, next, &sso.Refusal{Reason: "sign-in attempt expired", Message: "The sign-in took too long. Please sign in again."})
	case subtle.ConstantTimeCompare([]byte(state), []byte(got)) != 1:
		return s.oidcFailed(c, next, &sso.Refusal{Reason: "state does not match the attempt's", Message: "This sign-in was not started here, or was already used. Please sign in again."})
	case c.QueryParam("error") != "":
		// The provider's error code only: its description is text anyone
		// can put in a link.
		code := truncateString(c.QueryParam("error"), 64)
		return s.oidcFailed(c, next, &sso.Refusal{Reason: "provider error " + code, Message: "The sign-in provider ended the sign-in (" + code + "). Please try again."})
	case c.QueryParam("code") == "":
		return s.oidcFailed(c, next, &sso.Refusal{Reason: "no code", Message: "The sign-in provider sent no authorization code. Please sign in again."})
	}
	id, err := s.sso.Exchange(r.Context(), a, c.QueryParam("code"))
	if err != nil {
		return s.oidcFailed(c, next, err)
	}
	u, err := s.oidcUser(r.Context(), id)
	if err != nil {
		return s.oidcFailed(c, next, err)
	}
	if err := s.startSessionVia(c, u, true); err != nil {
		return err
	}
	s.log.Info("dashboard single sign-on", "user_id", u.ID, "role", u.Role, "remote_ip", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

// oidcFailed shows the login page with what went wrong: 403 for a refused
// sign-in, 503 when the provider cannot be reached. Anything else (the
// database) goes to the central error handler.
func (s *Server) oidcFailed(c echo.Context, next string, err error) error {
	var ref *sso.Refusal
	switch {
	case errors.As(err, &ref):
		s.log.Info("single sign-on refused", "reason", ref.Reason, "remote_ip", c.RealIP())
		return s.renderLogin(c, http.StatusForbidden, login.Form{Next: next, Error: ref.Message})
	case errors.Is(err, sso.ErrUnreachable):
		s.log.Warn("single sign-on provider unreachable", "err", err)
		c.Response().Header().Set("Retry-After", "30")
		return s.renderLogin(c, http.StatusServiceUnavailable, login.Form{Next: next,
			Error: "The sign-in provider " + s.sso.ProviderName() + " cannot be reached right now. Please try again in a minute."})
	}
	return err
}

func (s *Server) oidcCookieOptions(r *http.Request, maxAge int) *sessions.Options {
	o := s.cookieOptions(r, maxAge)
	o.Path = oidcCookiePath
	return o
}

// loginOptions adds the single sign-on button, and hides the password
// form when password sign-in is off, on every rendering of the login page.
func (s *Server) loginOptions(f *login.Form) {
	if s.sso == nil {
		return
	}
	href := oidcCookiePath
	if f.Next != "" && f.Next != "/" {
		href += "?next=" + url.QueryEscape(f.Next)
	}
	f.SSO = &login.SSO{Provider: s.sso.ProviderName(), Href: href}
	f.PasswordOff = !s.sso.PasswordLogin()
}

// requirePasswordLogin refuses password sign-ins when only single sign-on
// is allowed.
func (s *Server) requirePasswordLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.sso != nil && !s.sso.PasswordLogin() {
			return s.renderLogin(c, http.StatusForbidden, login.Form{Next: safeNext(c.FormValue("next")),
				Error: "Password sign-in is turned off: sign in with " + s.sso.ProviderName() + "."})
		}
		return next(c)
	}
}
