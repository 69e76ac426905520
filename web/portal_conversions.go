package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/portal"
)

// portalConversionsPage: GET /portal/conversions — the session partner's
// conversions only (every query takes its partner id).
func (s *Server) portalConversionsPage(c echo.Context) error {
	pid := portalOf(c).PartnerID
	p, err := s.conversionsView(c, portalPath+"/conversions", &pid)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.ConversionsPage(s.portalMeta(c, "Conversions", portal.NavConversions), p))
}

// portalConversionHistoryPage: GET /portal/conversions/history — one of
// the partner's conversions; another partner's is not found.
func (s *Server) portalConversionHistoryPage(c echo.Context) error {
	pid := portalOf(c).PartnerID
	h, err := s.conversionHistoryView(c, portalPath+"/conversions", portalPath+"/events/", &pid)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, portal.ConversionHistoryPage(s.portalMeta(c, "Conversion "+h.Key, portal.NavConversions), h))
}
