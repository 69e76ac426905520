package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// maxAuditFilter is the longest text filter of the audit log: actors,
// actions and target types are short names, target ids numbers.
const maxAuditFilter = 200

// auditQuery reads the audit log's filters (actor, action, target_type,
// target_id, since, until) and its cursor from the URL into the page
// query, each malformed value a 422 whose message names it (the dashboard
// shows only the message). The API takes RFC 3339
// times, the dashboard its datetime-local inputs (UTC): parseTime says
// which.
func auditQuery(c echo.Context, parseTime func(string) (time.Time, error)) (db.AuditPageParams, error) {
	var p db.AuditPageParams
	for _, f := range []struct {
		name string
		dst  **string
	}{{"actor", &p.Actor}, {"action", &p.Action}, {"target_type", &p.TargetType}, {"target_id", &p.TargetID}} {
		v := strings.TrimSpace(c.QueryParam(f.name))
		if v == "" {
			continue
		}
		if len(v) > maxAuditFilter {
			return p, invalidField(f.name, f.name+" must be at most 200 characters")
		}
		*f.dst = &v
	}
	// "endpoint.*" is every endpoint action.
	if p.Action != nil && strings.HasSuffix(*p.Action, "*") {
		prefix := strings.TrimSuffix(*p.Action, "*")
		p.Action, p.ActionPrefix = nil, &prefix
	}
	if p.TargetID != nil && p.TargetType == nil {
		return p, invalidField("target_id", "target_id needs target_type (such as endpoint or partner): ids are per type")
	}
	for _, t := range []struct {
		name string
		dst  **time.Time
	}{{"since", &p.Since}, {"until", &p.Until}} {
		v := c.QueryParam(t.name)
		if v == "" {
			continue
		}
		at, err := parseTime(v)
		if err != nil {
			return p, invalidField(t.name, t.name+" must be a date and time such as 2026-05-01T12:00:00Z")
		}
		*t.dst = &at
	}
	if p.Since != nil && p.Until != nil && !p.Since.Before(*p.Until) {
		return p, invalidField("until", "until must be after since")
	}
	if v := c.QueryParam("cursor"); v != "" {
		_, idText, ok := decodeCursor(v)
		id, err := strconv.ParseInt(idText, 10, 64)
		if !ok || err != nil || id < 1 {
			return p, invalidField("cursor", "cursor is not one from this list; pass next_cursor unchanged")
		}
		p.BeforeID = &id
	}
	return p, nil
}

// auditCursor is the cursor of the page after the one ending with e.
func auditCursor(e db.AuditLog) string {
	return encodeCursor(e.At, strconv.FormatInt(e.ID, 10))
}

func parseRFC3339(v string) (time.Time, error) { return time.Parse(time.RFC3339Nano, v) }
