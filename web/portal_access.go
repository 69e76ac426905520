package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/portal"
	"github.com/hookline/hookline/web/account"
)

// Partner portal access. A single-use sign-in link (random token, only its
// hash stored) starts a session scoped to one partner. The portal cookie is
// its own (name and path /portal), so a portal session never authenticates
// a dashboard route, and the dashboard's cookie is never read here. Every
// portal handler takes the partner from the session, never from the
// request, and every statement it runs filters by it.
const (
	portalCookie = "hookline_portal"
	portalPath   = "/portal"
	// Lifetimes like the dashboard's: 8 h idle, 7 days at most.
	portalIdle     = sessionIdle
	portalAbsolute = sessionAbsolute
	ctxPortal      = "hookline.portal"
	// defaultPortalLinkTTL is how long a sign-in link works unless
	// configured otherwise (HOOKLINE_PORTAL_LINK_TTL).
	defaultPortalLinkTTL = time.Hour
)

// PortalConfig is the partner portal's configuration.
type PortalConfig struct {
	// LinkTTL is how long a sign-in link works (default 1 hour).
	LinkTTL time.Duration
	// Title is the product name the portal shows ("" = "Delivery portal").
	Title string
	// PublicURL is the scheme and host links start with; without it no
	// link is made (HOOKLINE_PUBLIC_URL).
	PublicURL string
}

// portalPrincipal is the partner signed in to a portal request.
type portalPrincipal struct {
	SessionID   int64
	PartnerID   int64
	PartnerName string
	CSRF        string
	// ManageEndpoints: the operator allows this partner to create
	// endpoints, disable and enable them and change their event types.
	ManageEndpoints bool
}

// actor names the partner in the audit log.
func (p *portalPrincipal) actor() string { return "partner " + p.PartnerName + " (portal)" }

func portalOf(c echo.Context) *portalPrincipal {
	p, _ := c.Get(ctxPortal).(*portalPrincipal)
	return p
}

func (s *Server) portalTitle() string {
	if t := s.cfg.Portal.Title; t != "" {
		return t
	}
	return "Delivery portal"
}

// portalSignInPage: GET /portal/signin?token= and GET /portal/links/:token —
// checks the link without using it and answers a small page whose form
// posts the token (auto-submitted by a line of script, with a Continue
// button without it). A chat or mail previewer that fetches the URL
// therefore does not spend the link; a person lands in the portal in one
// step. A used, expired or revoked link gets a page saying so.
func (s *Server) portalSignInPage(c echo.Context) error {
	token := c.QueryParam("token")
	if token == "" {
		token = c.Param("token")
	}
	h := c.Response().Header()
	h.Set("Referrer-Policy", "no-referrer") // the token is in this page's URL
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	usable, err := s.portalLinkRefusal(c, token, false)
	if !usable || err != nil {
		return err
	}
	// A double-submit token, as the dashboard's login form has: the form
	// posts it and a cookie of this browser holds it, so another site
	// cannot post someone else's link into this browser (a login CSRF into
	// a portal the attacker controls).
	csrf := account.RandomToken(24)
	sess := sessions.NewSession(s.sessions, portalSignInCookie)
	sess.Values["t"] = csrf
	sess.Options = s.portalCookieOptions(c.Request(), 600)
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.SignIn(portal.Meta{Product: s.portalTitle(), Version: s.cfg.Version, Title: "Sign in"}, token, csrf))
}

// portalSignInCookie holds the sign-in page's double-submit token.
const portalSignInCookie = "hookline_portal_signin"

// portalSignInCSRF reports whether the sign-in POST carries the token of
// the page this browser was shown.
func (s *Server) portalSignInCSRF(c echo.Context) bool {
	sess, err := s.sessions.Get(c.Request(), portalSignInCookie)
	if err != nil {
		return false
	}
	want, _ := sess.Values["t"].(string)
	got := c.FormValue(csrfField)
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// portalLinkRefusal answers the refusal page for a link that cannot sign
// in (unknown, used, revoked, expired, its partner archived) and reports
// false; for a usable link it writes nothing and reports true. consumed
// says the link was just refused by the consuming UPDATE, so a link that
// still looks usable lost a race to another request: it is used.
func (s *Server) portalLinkRefusal(c echo.Context, token string, consumed bool) (bool, error) {
	invalid := "This sign-in link is not valid. Check that it was copied whole, or ask for a new one."
	used := "This sign-in link has already been used: each link signs in once. Ask for a new one (or, if you signed in with it, go back to the tab where you did)."
	if token == "" || len(token) > 200 {
		return false, s.portalLinkRefused(c, http.StatusNotFound, invalid)
	}
	st, err := s.q.PortalLinkState(c.Request().Context(), hashSessionID(token))
	switch {
	case db.NoRows(err):
		return false, s.portalLinkRefused(c, http.StatusNotFound, invalid)
	case err != nil:
		return false, err
	case st.PartnerArchivedAt != nil || st.RevokedAt != nil:
		return false, s.portalLinkRefused(c, http.StatusGone, "This sign-in link was revoked. Ask for a new one.")
	case st.UsedAt != nil:
		return false, s.portalLinkRefused(c, http.StatusGone, used)
	case !st.ExpiresAt.After(s.now()):
		return false, s.portalLinkRefused(c, http.StatusGone, "This sign-in link expired at "+st.ExpiresAt.UTC().Format("2006-01-02 15:04 MST")+". Links work for a short time only; ask for a new one.")
	case consumed:
		return false, s.portalLinkRefused(c, http.StatusGone, used)
	}
	return true, nil
}

// portalSignIn: POST /portal/signin {token} — uses the link once and
// starts a portal session. The token is the credential: a form from
// anywhere else cannot sign in without one.
func (s *Server) portalSignIn(c echo.Context) error {
	token := c.FormValue("token")
	h := c.Response().Header()
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	ctx := c.Request().Context()
	if !s.portalSignInCSRF(c) {
		return s.portalLinkRefused(c, http.StatusForbidden,
			"This sign-in form did not come from this browser's sign-in page. Open the sign-in link again.")
	}
	// Links are long random tokens, but guessing is throttled all the
	// same, per address, as dashboard sign-ins are.
	ip := c.RealIP()
	attempt, wait := s.throttle.take("portal:"+ip, ip, s.now())
	if attempt == nil {
		h.Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		return s.portalLinkRefused(c, http.StatusTooManyRequests, "Too many sign-in attempts from your address. Try again in "+humanWait(wait)+".")
	}
	if token == "" || len(token) > 200 {
		_, err := s.portalLinkRefusal(c, "", true)
		return err
	}
	link, err := s.q.PortalLinkConsume(ctx, db.PortalLinkConsumeParams{TokenHash: hashSessionID(token), Now: s.nowPtr()})
	if db.NoRows(err) {
		_, err := s.portalLinkRefusal(c, token, true)
		return err
	}
	if err != nil {
		attempt.GiveBack(s.now())
		return err
	}
	attempt.GiveBack(s.now())
	gone := sessions.NewSession(s.sessions, portalSignInCookie)
	gone.Options = s.portalCookieOptions(c.Request(), -1)
	_ = gone.Save(c.Request(), c.Response())
	// A previous portal session in this browser ends: one cookie, one
	// partner.
	if old := s.portalCookieToken(c.Request()); old != "" {
		if row, err := s.q.PortalSessionGet(ctx, hashSessionID(old)); err == nil {
			_, _ = s.q.PortalSessionRevoke(ctx, db.PortalSessionRevokeParams{ID: row.ID, PartnerID: row.PartnerID})
		}
	}
	raw := account.RandomToken(32)
	linkID := link.ID
	if _, err := s.q.PortalSessionCreate(ctx, db.PortalSessionCreateParams{
		TokenHash: hashSessionID(raw), PartnerID: link.PartnerID, LinkID: &linkID, CsrfToken: account.RandomToken(32),
		UserAgent: truncateString(c.Request().UserAgent(), 200), RemoteIp: truncateString(c.RealIP(), 100),
	}); err != nil {
		return err
	}
	sess := sessions.NewSession(s.sessions, portalCookie)
	sess.Values["psid"] = raw
	sess.Options = s.portalCookieOptions(c.Request(), int(portalAbsolute/time.Second))
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, portalPath+"/")
}

func (s *Server) nowPtr() *time.Time {
	t := s.now()
	return &t
}

// dbNow is the "now" for statements that make deliveries due: nil in
// production, so PostgreSQL's now() stamps them as ingest does and the
// worker's claims compare them with the same clock; the injected clock in
// tests, which inject one into the worker too.
func (s *Server) dbNow() *time.Time {
	if !s.injected {
		return nil
	}
	return s.nowPtr()
}

func (s *Server) portalLinkRefused(c echo.Context, status int, message string) error {
	return s.render(c, status, portal.Refused(portal.Meta{Product: s.portalTitle(), Version: s.cfg.Version, Title: "Sign-in link not valid"}, message))
}

func (s *Server) portalCookieOptions(r *http.Request, maxAge int) *sessions.Options {
	o := s.cookieOptions(r, maxAge)
	o.Path = portalPath
	return o
}

// portalCookieToken is the raw session token of the portal cookie, or "".
func (s *Server) portalCookieToken(r *http.Request) string {
	sess, err := s.sessions.Get(r, portalCookie)
	if err != nil {
		return ""
	}
	raw, _ := sess.Values["psid"].(string)
	return raw
}

// loadPortal resolves the portal cookie to its partner, or nil when there
// is no live session (missing, revoked, idle or too old, partner archived).
func (s *Server) loadPortal(ctx context.Context, r *http.Request) (*portalPrincipal, error) {
	raw := s.portalCookieToken(r)
	if raw == "" {
		return nil, nil
	}
	row, err := s.q.PortalSessionGet(ctx, hashSessionID(raw))
	if db.NoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if now.Sub(row.LastSeenAt) > portalIdle || now.Sub(row.CreatedAt) > portalAbsolute {
		_, _ = s.q.PortalSessionRevoke(ctx, db.PortalSessionRevokeParams{ID: row.ID, PartnerID: row.PartnerID})
		return nil, nil
	}
	if now.Sub(row.LastSeenAt) > sessionTouchEvery {
		if err := s.q.PortalSessionTouch(ctx, db.PortalSessionTouchParams{ID: row.ID, PartnerID: row.PartnerID}); err != nil {
			return nil, err
		}
	}
	return &portalPrincipal{SessionID: row.ID, PartnerID: row.PartnerID, PartnerName: row.PartnerName, CSRF: row.CsrfToken,
		ManageEndpoints: row.PortalManageEndpoints}, nil
}

// requirePortal lets portal sessions through. Without one, a page load
// gets the "signed out" page (401) and anything else a 403.
func (s *Server) requirePortal(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.loadPortal(c.Request().Context(), c.Request())
		if err != nil {
			return err
		}
		if p == nil {
			r := c.Request()
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				return &apiError{http.StatusForbidden, "portal_session", "your portal session has ended; open a new sign-in link", ""}
			}
			if isHTMX(c) {
				c.Response().Header().Set("HX-Refresh", "true")
			}
			return s.render(c, http.StatusUnauthorized, portal.Refused(portal.Meta{Product: s.portalTitle(), Version: s.cfg.Version, Title: "Signed out"},
				"You are not signed in, or your session has ended. Open a new sign-in link from the app you came from, or ask your contact for one."))
		}
		c.Set(ctxPortal, p)
		return next(c)
	}
}

// requirePortalCSRF refuses every state change without the portal
// session's CSRF token (form field csrf_token or header X-CSRF-Token).
func (s *Server) requirePortalCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		p := portalOf(c)
		if p == nil || !csrfMatches(c, p.CSRF) {
			return &apiError{http.StatusForbidden, "csrf", "this form has expired or did not come from this portal; reload the page and try again", ""}
		}
		return next(c)
	}
}

// portalSignOut: POST /portal/signout
func (s *Server) portalSignOut(c echo.Context) error {
	p := portalOf(c)
	if _, err := s.q.PortalSessionRevoke(c.Request().Context(), db.PortalSessionRevokeParams{ID: p.SessionID, PartnerID: p.PartnerID}); err != nil {
		return err
	}
	sess := sessions.NewSession(s.sessions, portalCookie)
	sess.Options = s.portalCookieOptions(c.Request(), -1)
	_ = sess.Save(c.Request(), c.Response())
	return s.render(c, http.StatusOK, portal.Refused(portal.Meta{Product: s.portalTitle(), Version: s.cfg.Version, Title: "Signed out"},
		"You are signed out. Open a new sign-in link to come back."))
}

// isPortal reports whether the request is for the partner portal.
func isPortal(c echo.Context) bool {
	p := c.Request().URL.Path
	return p == portalPath || strings.HasPrefix(p, portalPath+"/")
}
