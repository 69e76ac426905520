package web

import (
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
)

// renderErrorPage answers a dashboard request with the friendly error page
// (never a stack trace or an internal error's text).
func (s *Server) renderErrorPage(c echo.Context, ae *apiError) {
	if isPortal(c) {
		s.renderPortalError(c, ae)
		return
	}
	m := layout.PageMeta{Version: s.cfg.Version}
	if p := principalOf(c); p != nil {
		m.User = p.layoutUser()
		m.CSRFToken = p.CSRF
	}
	if err := s.render(c, ae.Status, layout.ErrorPage(m, ae.Status, ae.Message)); err != nil {
		_ = c.String(ae.Status, ae.Message)
	}
}
