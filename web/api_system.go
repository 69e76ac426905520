package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db/migrations"
)

// healthz: GET /healthz — the process is up (liveness; no database call, so
// a database outage does not get the process restarted).
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: GET /readyz — the database is reachable and fully migrated, so
// this replica can take traffic.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		c.Response().Header().Set("Retry-After", "5")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
	}
	pending, err := migrations.Pending(ctx, s.pool)
	if err != nil || pending {
		c.Response().Header().Set("Retry-After", "5")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database not migrated"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
