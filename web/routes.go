package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// routes is hookline's one route table. Each group says who may call it.
func (s *Server) routes() {
	e := s.e
	e.Use(middleware.RequestID())
	e.Use(s.recoverPanics)
	e.Use(s.logRequests)

	// Probes: no authentication, no session.
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/api/openapi.json", s.openAPI)
	e.GET("/metrics", s.metricsHandler())

	// JSON API: Authorization: Bearer <api key>.
	api := e.Group("/api/v1", s.requireAPIKey)
	api.POST("/events", s.apiEventCreate)
	api.POST("/events/batch", s.apiEventBatch)
	api.GET("/events/:id", s.apiEventGet)
	api.POST("/partners", s.apiPartnerCreate)
	api.GET("/partners", s.apiPartnerList)
	api.GET("/partners/:id", s.apiPartnerGet)
	api.POST("/endpoints", s.apiEndpointCreate)
	api.GET("/endpoints", s.apiEndpointList)
	api.GET("/endpoints/:id", s.apiEndpointGet)
	api.PATCH("/endpoints/:id", s.apiEndpointPatch)
	api.POST("/endpoints/:id/secrets/rotate", s.apiRotateSecret)
	api.POST("/endpoints/:id/pause", s.apiBreaker(actionPause))
	api.POST("/endpoints/:id/resume", s.apiBreaker(actionResume))
	api.POST("/endpoints/:id/force-close", s.apiBreaker(actionForceClose))
	api.GET("/stats", s.apiStats)
	api.GET("/dead-letters/clusters", s.apiDeadLetterClusters)
	api.POST("/dead-letters/replay", s.apiReplay)

	// Unknown API paths answer in JSON, not with a dashboard page.
	api.Any("/*", func(c echo.Context) error {
		return &apiError{http.StatusNotFound, "not_found", "no such API route", ""}
	})
}
