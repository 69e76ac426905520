package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/sessions"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/views/login"
	"github.com/hookline/hookline/web/account"
)

// The login form has no session to bind a CSRF token to, so it uses a
// double-submit token: a random value in its own cookie and in the form.
const loginCookie = "hookline_login"

// loginPage: GET /login
func (s *Server) loginPage(c echo.Context) error {
	if p, err := s.loadPrincipal(c.Request().Context(), c.Request()); err == nil && p != nil {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	return s.renderLogin(c, http.StatusOK, login.Form{Next: safeNext(c.QueryParam("next"))})
}

func (s *Server) renderLogin(c echo.Context, status int, f login.Form) error {
	token := account.RandomToken(24)
	sess := sessions.NewSession(s.sessions, loginCookie)
	sess.Values["t"] = token
	sess.Options = s.cookieOptions(c.Request(), 3600)
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return err
	}
	f.Token = token
	return s.render(c, status, login.Page(layout.PageMeta{Title: "Sign in", Version: s.cfg.Version}, f))
}

// loginSubmit: POST /login — checks the login CSRF token, the throttle, then
// the password (bcrypt; unknown emails cost the same time), and starts a new
// session.
func (s *Server) loginSubmit(c echo.Context) error {
	r := c.Request()
	next := safeNext(c.FormValue("next"))
	email := strings.TrimSpace(c.FormValue("email"))
	password := c.FormValue("password")
	form := login.Form{Email: email, Next: next}

	sess, err := s.sessions.Get(r, loginCookie)
	want, _ := sess.Values["t"].(string)
	got := c.FormValue("login_token")
	if err != nil || want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		form.Error = "The sign-in form expired. Please try again."
		return s.renderLogin(c, http.StatusForbidden, form)
	}
	ip := c.RealIP()
	key := strings.ToLower(email)
	if ok, wait := s.throttle.allowed(key, ip, s.now()); !ok {
		c.Response().Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		form.Error = fmt.Sprintf("Too many failed attempts. Try again in %s.", humanWait(wait))
		return s.renderLogin(c, http.StatusTooManyRequests, form)
	}
	u, err := s.q.UserGetByEmail(r.Context(), email)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		account.DummyCheck(password)
	case err != nil:
		return err
	}
	if err != nil || u.DisabledAt != nil || !account.CheckPassword(u.PasswordHash, password) {
		s.throttle.failed(key, ip, s.now())
		s.log.Info("failed dashboard login", "remote_ip", ip)
		form.Error = "Wrong email or password."
		return s.renderLogin(c, http.StatusUnauthorized, form)
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	gone := sessions.NewSession(s.sessions, loginCookie)
	gone.Options = s.cookieOptions(r, -1)
	_ = gone.Save(r, c.Response())
	return c.Redirect(http.StatusSeeOther, next)
}

// logout: POST /logout
func (s *Server) logout(c echo.Context) error {
	s.endSession(c)
	return c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps post-login redirects on this site: a local absolute path,
// never "//host" or a scheme.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.HasPrefix(next, "/login") {
		return "/"
	}
	return next
}

func humanWait(d interface{ Seconds() float64 }) string {
	sec := int(d.Seconds()) + 1
	if sec < 60 {
		return fmt.Sprintf("%d seconds", sec)
	}
	return fmt.Sprintf("%d minutes", (sec+59)/60)
}
