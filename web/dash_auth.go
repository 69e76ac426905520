package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
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
	s.loginOptions(&f)
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
	// The attempt is taken before the password is checked and given back
	// only when it was right, so parallel guesses are counted one by one.
	attempt, wait := s.throttle.take(key, ip, s.now())
	if attempt == nil {
		c.Response().Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		form.Error = fmt.Sprintf("Too many failed attempts. Try again in %s.", humanWait(wait))
		return s.renderLogin(c, http.StatusTooManyRequests, form)
	}
	u, err := s.q.UserGetByEmail(r.Context(), email)
	if err != nil && !db.NoRows(err) {
		attempt.GiveBack(s.now())
		return err
	}
	known := err == nil
	ok, err := s.throttle.evaluate(r.Context(), func() bool {
		if !known {
			account.DummyCheck(password) // unknown emails cost the same time
			return false
		}
		return u.DisabledAt == nil && account.CheckPassword(u.PasswordHash, password)
	})
	if errors.Is(err, errEvaluationsBusy) {
		c.Response().Header().Set("Retry-After", "5")
		form.Error = "Too many sign-ins at once. Try again in a few seconds."
		return s.renderLogin(c, http.StatusServiceUnavailable, form)
	}
	if err != nil {
		return err
	}
	if !ok {
		s.log.Info("failed dashboard login", "remote_ip", ip)
		form.Error = "Wrong email or password."
		return s.renderLogin(c, http.StatusUnauthorized, form)
	}
	attempt.GiveBack(s.now())
	if pending, err := s.beginSecondFactor(c, u, key, next); err != nil || pending {
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, loginCodePath)
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

// safeNext keeps post-login redirects on this site: only a path on this
// origin ("/endpoints?q=x") is kept; anything else is "/". Browsers are
// lenient with Location: they drop tabs and newlines, read a backslash as "/",
// and take "//host" as another site, so a value is refused if it holds a
// control character, whitespace or a backslash, if it (or its percent-
// decoded path) starts with "//", or if it parses with a scheme or a host.
func safeNext(next string) string {
	if !sameOriginPath(next) {
		return "/"
	}
	return next
}

func sameOriginPath(next string) bool {
	if next == "" || len(next) > 2048 || !utf8.ValidString(next) || next[0] != '/' {
		return false
	}
	if strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return false
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return false
	}
	// The path once more after percent-decoding (twice, for "%252F"): an
	// encoded "//", backslash or control character is refused too.
	path, _, _ := strings.Cut(next, "?")
	path, _, _ = strings.Cut(path, "#")
	for range 2 {
		dec, err := url.PathUnescape(path)
		if err != nil {
			return false
		}
		path = dec
		if strings.HasPrefix(path, "//") || strings.ContainsFunc(path, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
			return false
		}
	}
	return !strings.HasPrefix(u.Path, "/login")
}

func humanWait(d interface{ Seconds() float64 }) string {
	sec := int(d.Seconds()) + 1
	if sec < 60 {
		return fmt.Sprintf("%d seconds", sec)
	}
	return fmt.Sprintf("%d minutes", (sec+59)/60)
}
