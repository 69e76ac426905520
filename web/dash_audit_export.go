package web

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// auditExportBatch is how many entries the export reads a statement: the
// log is read in keyset pages, never all at once.
const auditExportBatch = 1000

// auditExport: GET /audit/export.csv?<the audit page's filters> — every
// entry the filters match, newest first, as CSV.
//
// Unlike the pages, the export is streamed rather than rendered into a
// buffer: a year of audit log does not fit one. The first batch is read
// before anything is written, so a database that is down still answers
// 503; a failure after that cuts the download short (abortStream), which
// the browser reports as a failed download, not as a complete file.
func (s *Server) auditExport(c echo.Context) error {
	p, err := auditQuery(c, parseLocalTime)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p.RowLimit = auditExportBatch
	rows, err := s.q.AuditPage(ctx, p)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="hookline-audit-%s.csv"`, s.now().UTC().Format("20060102T1504Z")))
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	if err := w.Write([]string{"id", "at", "actor", "action", "target_type", "target_id", "details"}); err != nil {
		return err
	}
	for len(rows) > 0 {
		for _, r := range rows {
			_ = w.Write(auditCSVRecord(r)) // a write error is kept by w and read at the flush
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return nil // the client went away
		}
		c.Response().Flush()
		if len(rows) < auditExportBatch {
			break
		}
		p.BeforeID = &rows[len(rows)-1].ID
		if rows, err = s.q.AuditPage(ctx, p); err != nil {
			s.abortStream(c, fmt.Errorf("audit export after id %d: %w", *p.BeforeID, err))
			return nil
		}
	}
	return nil
}

// abortStream ends a streamed response that failed after its status was
// sent: it logs the error, which the central error handler no longer can,
// and drops the connection, so the client sees a truncated response
// instead of a complete-looking one. (HTTP/2 cannot be hijacked: there the
// response just ends, and the log line is what is left.)
func (s *Server) abortStream(c echo.Context, err error) {
	s.log.Error("streamed response cut short", "route", c.Path(), "err", err)
	if conn, _, herr := http.NewResponseController(c.Response().Writer).Hijack(); herr == nil {
		conn.Close()
	}
}

func auditCSVRecord(r db.AuditLog) []string {
	return []string{
		strconv.FormatInt(r.ID, 10), r.At.UTC().Format(time.RFC3339Nano),
		csvCell(r.Actor), csvCell(r.Action), csvCell(r.TargetType), csvCell(r.TargetID), csvCell(string(r.Details)),
	}
}

// csvCell defuses a cell a spreadsheet would run as a formula: one that
// starts with =, +, - or @ (or a tab or carriage return, which some
// spreadsheets skip before reading those) gets a leading apostrophe, which
// spreadsheets show as text. Actors, target ids and details come from
// users and partners.
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
