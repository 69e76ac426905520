package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	auditview "github.com/hookline/hookline/views/audit"
	"github.com/hookline/hookline/views/layout"
)

const auditPageSize = 100

// auditPage: GET /audit[?before=ID]
func (s *Server) auditPage(c echo.Context) error {
	var before *int64
	if v := c.QueryParam("before"); v != "" {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			before = &id
		}
	}
	rows, err := s.q.AuditList(c.Request().Context(), db.AuditListParams{BeforeID: before, RowLimit: auditPageSize + 1})
	if err != nil {
		return err
	}
	p := auditview.PageData{Now: s.now()}
	if len(rows) > auditPageSize {
		rows = rows[:auditPageSize]
		p.Next = rows[len(rows)-1].ID
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
		p.Entries = append(p.Entries, e)
	}
	return s.render(c, http.StatusOK, auditview.Page(s.meta(c, "Audit log", layout.NavAudit), p))
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
