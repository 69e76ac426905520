package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiStats: GET /api/v1/stats — the pipeline summary and its alerts.
func (s *Server) apiStats(c echo.Context) error {
	st, err := s.pipelineStats(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
