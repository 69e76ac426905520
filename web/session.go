package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/sender"
)

// Dashboard sessions: the cookie (gorilla/sessions, signed and encrypted)
// carries only a random session id; the session itself is a row in
// user_sessions, so logout, a disabled user or a role change end it
// everywhere at once.
const (
	sessionCookie   = "hookline_session"
	sessionIdle     = 8 * time.Hour
	sessionAbsolute = 7 * 24 * time.Hour
	// sessionTouchEvery bounds writes: last_seen_at moves at most this often.
	sessionTouchEvery = time.Minute
	csrfHeader        = "X-CSRF-Token"
	csrfField         = "csrf_token"
	ctxPrincipal      = "hookline.principal"
)

// principal is the signed-in user of a dashboard request.
type principal struct {
	UserID    int64
	Email     string
	Role      string
	SessionID string // the stored (hashed) id
	CSRF      string
	// SSO: the session began with a single sign-on, whose provider owns
	// the second factor (HOOKLINE_REQUIRE_2FA does not ask for hookline's).
	SSO bool
}

func (p *principal) actor() string { return "user:" + p.Email }

func (p *principal) can(role string) bool { return p != nil && account.RoleAllows(p.Role, role) }

func (p *principal) layoutUser() *layout.User {
	if p == nil {
		return nil
	}
	return &layout.User{Email: p.Email, Role: p.Role}
}

// newCookieStore derives the cookie signing and encryption keys from the
// session key, so one configured secret serves both purposes safely.
func newCookieStore(sessionKey []byte) *sessions.CookieStore {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, sessionKey)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	store := sessions.NewCookieStore(derive("hookline cookie signing"), derive("hookline cookie encryption"))
	store.Options = &sessions.Options{Path: "/", MaxAge: int(sessionAbsolute / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode}
	return store
}

func hashSessionID(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// secureRequest reports whether the dashboard is reached over HTTPS, which
// makes cookies Secure and adds HSTS: the connection is TLS, a proxy in
// front says X-Forwarded-Proto: https, or HOOKLINE_PUBLIC_URL is https.
// The proxy's word is taken even when HOOKLINE_TRUST_PROXY is off: a
// client that forges it only gets cookies its own browser will not send
// back over plain HTTP (client addresses, which matter to throttles and
// logs, still come from X-Forwarded-For only when the proxy is trusted).
func (s *Server) secureRequest(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(s.cfg.Portal.PublicURL, "https://") {
		return true
	}
	return strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (s *Server) cookieOptions(r *http.Request, maxAge int) *sessions.Options {
	return &sessions.Options{Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureRequest(r)}
}

// startSession signs a user in: a fresh session id (never one that existed
// before the login, so a planted cookie is useless) and a fresh CSRF token.
func (s *Server) startSession(c echo.Context, u db.User) error {
	return s.startSessionVia(c, u, false)
}

// startSessionVia is startSession, noting in the (signed and encrypted)
// cookie whether the sign-in was a single sign-on.
func (s *Server) startSessionVia(c echo.Context, u db.User, sso bool) error {
	r := c.Request()
	if old, err := s.sessions.Get(r, sessionCookie); err == nil {
		if sid, ok := old.Values["sid"].(string); ok {
			_ = s.q.UserSessionDelete(r.Context(), hashSessionID(sid))
		}
	}
	raw := account.RandomToken(32)
	csrf := account.RandomToken(32)
	err := s.q.UserSessionCreate(r.Context(), db.UserSessionCreateParams{
		ID: hashSessionID(raw), UserID: u.ID, CsrfToken: csrf,
		UserAgent: truncateString(r.UserAgent(), 200), RemoteIp: truncateString(c.RealIP(), 100),
	})
	if err != nil {
		return err
	}
	if err := s.q.UserRecordLogin(r.Context(), u.ID); err != nil {
		return err
	}
	sess := sessions.NewSession(s.sessions, sessionCookie)
	sess.Values["sid"] = raw
	if sso {
		sess.Values["sso"] = true
	}
	sess.Options = s.cookieOptions(r, int(sessionAbsolute/time.Second))
	return sess.Save(r, c.Response())
}

// endSession signs the request's user out and clears the cookie.
func (s *Server) endSession(c echo.Context) {
	r := c.Request()
	if p := principalOf(c); p != nil {
		_ = s.q.UserSessionDelete(r.Context(), p.SessionID)
	}
	sess := sessions.NewSession(s.sessions, sessionCookie)
	sess.Options = s.cookieOptions(r, -1)
	_ = sess.Save(r, c.Response())
}

// loadPrincipal resolves the session cookie to a principal, or nil when
// there is no valid session (missing, expired, revoked, user disabled).
func (s *Server) loadPrincipal(ctx context.Context, r *http.Request) (*principal, error) {
	sess, err := s.sessions.Get(r, sessionCookie)
	if err != nil {
		return nil, nil // a cookie we cannot read (old key, tampering) is no session
	}
	raw, ok := sess.Values["sid"].(string)
	if !ok || raw == "" {
		return nil, nil
	}
	id := hashSessionID(raw)
	row, err := s.q.UserSessionGet(ctx, id)
	if db.NoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if now.Sub(row.LastSeenAt) > sessionIdle || now.Sub(row.CreatedAt) > sessionAbsolute {
		_ = s.q.UserSessionDelete(ctx, id)
		return nil, nil
	}
	if now.Sub(row.LastSeenAt) > sessionTouchEvery {
		if err := s.q.UserSessionTouch(ctx, id); err != nil {
			return nil, err
		}
	}
	viaSSO, _ := sess.Values["sso"].(bool)
	return &principal{UserID: row.UserID, Email: row.Email, Role: row.Role, SessionID: id, CSRF: row.CsrfToken, SSO: viaSSO}, nil
}

// requireSession lets signed-in users through. Others are sent to the login
// page: a redirect for page loads, HX-Redirect for htmx requests, 401 for
// anything else.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.loadPrincipal(c.Request().Context(), c.Request())
		if err != nil {
			return err
		}
		if p == nil {
			login := "/login"
			if r := c.Request(); r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
				login += "?next=" + url.QueryEscape(r.URL.RequestURI())
				return c.Redirect(http.StatusSeeOther, login)
			}
			if c.Request().Header.Get("HX-Request") != "" {
				c.Response().Header().Set("HX-Redirect", login)
			}
			return &apiError{http.StatusUnauthorized, "unauthorized", "your session has ended; sign in again", ""}
		}
		c.Set(ctxPrincipal, p)
		return next(c)
	}
}

// requireCSRF refuses every state-changing request whose token (form field
// csrf_token, or header X-CSRF-Token as htmx sends it) does not match the
// session's. Safe methods pass.
func (s *Server) requireCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		p := principalOf(c)
		if p == nil || !csrfMatches(c, p.CSRF) {
			return &apiError{http.StatusForbidden, "csrf", "this form has expired or did not come from hookline; reload the page and try again", ""}
		}
		return next(c)
	}
}

// csrfMatches reports whether the request carries the session's CSRF token
// (header X-CSRF-Token as htmx sends it, or form field csrf_token); the
// dashboard and the partner portal check their own sessions' tokens.
func csrfMatches(c echo.Context, want string) bool {
	token := c.Request().Header.Get(csrfHeader)
	if token == "" {
		token = c.FormValue(csrfField)
	}
	return want != "" && token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// requireRole lets through principals with at least the role's privileges.
func requireRole(role string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !principalOf(c).can(role) {
				return &apiError{http.StatusForbidden, "forbidden", "your role (" + principalOf(c).roleName() + ") cannot do this; ask an admin", ""}
			}
			return next(c)
		}
	}
}

func (p *principal) roleName() string {
	if p == nil {
		return "none"
	}
	return p.Role
}

func principalOf(c echo.Context) *principal {
	p, _ := c.Get(ctxPrincipal).(*principal)
	return p
}

// truncateString cuts s to at most n bytes at a character boundary, first
// dropping bytes that are not UTF-8 and NULs (a User-Agent header may carry
// any byte, and PostgreSQL's text refuses both).
func truncateString(s string, n int) string {
	return sender.Truncate(strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", ""), n)
}
