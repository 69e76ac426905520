package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

type auditEntryJSON struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	Details    json.RawMessage `json:"details"`
}

// apiAuditList: GET /api/v1/audit — the audit log, newest first, filtered
// and paged by an opaque cursor:
// ?actor=&action=&target_type=&target_id=&since=&until=&limit=&cursor=.
func (s *Server) apiAuditList(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	p, err := auditQuery(c, parseRFC3339)
	if err != nil {
		return err
	}
	p.RowLimit = int32(limit + 1)
	rows, err := s.q.AuditPage(c.Request().Context(), p)
	if err != nil {
		return err
	}
	rows, next := cutPage(rows, limit, auditCursor)
	out := make([]auditEntryJSON, len(rows))
	for i, r := range rows {
		out[i] = auditEntryJSON{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID, Details: r.Details}
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out, "next_cursor": next})
}
