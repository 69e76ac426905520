package web

// Dead letters over the API: clusters and replay.

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiDeadLetterClusters: GET /api/v1/dead-letters/clusters?hours=24
func (s *Server) apiDeadLetterClusters(c echo.Context) error {
	hours, err := hoursParam(c, 24)
	if err != nil {
		return err
	}
	clusters, err := s.deadLetterClusters(c.Request().Context(), hours)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"hours": hours, "since": clusterSince(s.now(), hours), "clusters": clusters})
}

// apiReplay: POST /api/v1/dead-letters/replay — {delivery_ids} | {cluster} |
// {endpoint_id[, since]} → {replayed: n}.
func (s *Server) apiReplay(c echo.Context) error {
	var sel replaySelector
	if err := s.decodeJSON(c, &sel); err != nil {
		return err
	}
	res, err := s.replay(c.Request().Context(), sel, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"replayed": len(res.IDs), "delivery_ids": nonNil(res.IDs)})
}
