package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	auditview "github.com/hookline/hookline/views/audit"
	"github.com/hookline/hookline/views/layout"
)

const auditPageSize = 100

// auditPage: GET /audit?actor=&action=&target_type=&target_id=&since=&until=&cursor=
// — the audit log, newest first, through the same statement as the API's
// GET /api/v1/audit and the CSV export.
func (s *Server) auditPage(c echo.Context) error {
	p, err := auditQuery(c, parseLocalTime)
	if err != nil {
		return err
	}
	p.RowLimit = auditPageSize + 1
	rows, err := s.q.AuditPage(c.Request().Context(), p)
	if err != nil {
		return err
	}
	page := auditview.PageData{Filter: auditFilterOf(c), Now: s.now()}
	if len(rows) > auditPageSize {
		rows = rows[:auditPageSize]
		v := page.Filter.Values()
		v.Set("cursor", auditCursor(rows[len(rows)-1]))
		page.NextURL = "/audit?" + v.Encode()
	}
	for _, r := range rows {
		e := auditview.Entry{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, Details: detailsText(r.Details)}
		if r.TargetType != "" {
			e.Target = r.TargetType
			if r.TargetID != "" {
				e.Target += " " + r.TargetID
			}
		}
		switch r.TargetType {
		case "endpoint":
			e.Href = "/endpoints/" + r.TargetID
		case "partner":
			e.Href = "/partners/" + r.TargetID
		}
		page.Entries = append(page.Entries, e)
	}
	return s.render(c, http.StatusOK, auditview.Page(s.meta(c, "Audit log", layout.NavAudit), page))
}

// auditFilterOf is the page's filters as typed, for the form and the links
// (auditQuery has checked them).
func auditFilterOf(c echo.Context) auditview.Filter {
	v := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	return auditview.Filter{Actor: v("actor"), Action: v("action"), TargetType: v("target_type"), TargetID: v("target_id"),
		Since: v("since"), Until: v("until")}
}

func detailsText(raw []byte) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		if list, ok := v.([]any); ok {
			strs := make([]string, len(list))
			for i, x := range list {
				strs[i] = fmt.Sprint(x)
			}
			v = strings.Join(strs, ", ")
		}
		parts = append(parts, fmt.Sprintf("%s: %v", k, v))
	}
	return strings.Join(parts, " · ")
}
