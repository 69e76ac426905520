package web

import (
	"net/http"
	"strconv"
	"time"

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
	return c.JSON(http.StatusOK, map[string]any{"hours": hours, "clusters": clusters})
}

func hoursParam(c echo.Context, def int) (int, error) {
	v := c.QueryParam("hours")
	if v == "" {
		return def, nil
	}
	h, err := strconv.Atoi(v)
	if err != nil || h < 1 || h > maxClusterHours {
		return 0, invalidField("hours", "must be a whole number of hours between 1 and 2160")
	}
	return h, nil
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

// apiRotateSecret: POST /api/v1/endpoints/:id/secrets/rotate {overlap_seconds}
func (s *Server) apiRotateSecret(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	in := struct {
		OverlapSeconds *int64 `json:"overlap_seconds"`
	}{}
	if c.Request().ContentLength != 0 {
		if err := s.decodeJSON(c, &in); err != nil {
			return err
		}
	}
	overlap := int64(defaultOverlap / time.Second)
	if in.OverlapSeconds != nil {
		overlap = *in.OverlapSeconds
	}
	secret, until, err := s.rotateSecret(c.Request().Context(), id, overlap, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"secret": secret, "previous_expire_at": until.UTC()})
}

// apiBreaker returns the handler of one breaker action:
// POST /api/v1/endpoints/:id/{pause,resume,force-close}.
func (s *Server) apiBreaker(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "endpoint")
		if err != nil {
			return err
		}
		h, err := s.breakerAction(c.Request().Context(), id, action, apiKeyOf(c).actor())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, healthView(h))
	}
}
