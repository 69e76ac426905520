package web

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Paging of the event log and the attempt log: newest first, keyset on
// (time, id) with an opaque cursor, never OFFSET.
const (
	defaultPageLimit = 50
	maxPageLimit     = 500
)

// encodeCursor makes the opaque cursor after a row at (t, id). The time
// keeps PostgreSQL's microseconds, so the next page starts exactly after it.
func encodeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id))
}

// cutPage cuts rows, read with one more than limit, to limit; next is the
// cursor after the last row kept, nil when rows held no more than limit.
func cutPage[T any](rows []T, limit int, cursor func(T) string) (page []T, next *string) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	cur := cursor(rows[limit-1])
	return rows, &cur
}

// decodeCursor reads a cursor made by encodeCursor.
func decodeCursor(s string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", false
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok || id == "" {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, "", false
	}
	return t, id, true
}

// limitParam reads ?limit=: 50 when absent, at most 500 (a larger value is
// capped), a whole number from 1.
func limitParam(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultPageLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, invalidField("limit", "must be a whole number from 1 (at most 500 are returned)")
	}
	return min(n, maxPageLimit), nil
}

// timeRangeParams reads ?since= (inclusive) and ?until= (exclusive), each
// an RFC 3339 time such as 2026-05-01T12:00:00Z.
func timeRangeParams(c echo.Context) (since, until *time.Time, err error) {
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"since", &since}, {"until", &until}} {
		v := c.QueryParam(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, nil, invalidField(p.name, "must be an RFC 3339 time such as 2026-05-01T12:00:00Z")
		}
		*p.dst = &t
	}
	if since != nil && until != nil && !since.Before(*until) {
		return nil, nil, invalidField("until", "must be after since")
	}
	return since, until, nil
}

// idParam reads an optional positive integer id from the query.
func idParam(c echo.Context, name string) (*int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	id, ok := parseID(v)
	if !ok {
		return nil, invalidField(name, "must be a positive whole number")
	}
	return &id, nil
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

// pathID parses the :id path parameter; a malformed id is a 404 like an
// unknown one (ids are not user-chosen).
func pathID(c echo.Context, what string) (int64, error) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return 0, notFound(what)
	}
	return id, nil
}

// parseLocalTime reads a datetime-local input (interpreted as UTC) or RFC 3339.
func parseLocalTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02T15:04", v)
}
