package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"
)

// apiError is an error with a status, a stable machine code, a message safe
// to show, and optionally the input field it concerns.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func badRequest(msg string) error { return &apiError{http.StatusBadRequest, "bad_request", msg, ""} }

func invalidField(field, msg string) error {
	return &apiError{http.StatusUnprocessableEntity, "invalid_field", msg, field}
}

func notFound(what string) error {
	return &apiError{http.StatusNotFound, "not_found", what + " not found", ""}
}

// missing is the one place where a single-row query finding no row becomes
// a 404: no row turns into notFound(what), and any other error is wrapped
// with what was being loaded, so the log says which query failed.
func missing(err error, what string) error {
	if db.NoRows(err) {
		return notFound(what)
	}
	return fmt.Errorf("load %s: %w", what, err)
}

func conflict(field, msg string) error {
	return &apiError{http.StatusConflict, "conflict", msg, field}
}

// errUnavailable marks a request that failed because PostgreSQL is down.
var errUnavailable = &apiError{http.StatusServiceUnavailable, "unavailable", "the database is unavailable; retry later", ""}

// dbUnavailable reports whether err means the database cannot be reached
// (as opposed to a bug or bad input): connection failures, server shutdown,
// too many connections, timeouts.
func dbUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, starting up
			pgErr.Code == "53300", pgErr.Code == "53000": // too many connections, insufficient resources
			return true
		}
		return false
	}
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// handleError is echo's one error handler: it turns any handler error into
// a status and a JSON body (API) or a page (dashboard), and logs internal
// errors once. Internal error text never reaches the client.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := s.classify(err, c)
	if ae.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "5")
	}
	if isAPI(c) {
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(ae.Status)
			return
		}
		_ = c.JSON(ae.Status, map[string]*apiError{"error": ae})
		return
	}
	s.renderErrorPage(c, ae)
}

func (s *Server) classify(err error, c echo.Context) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && he.Code < 500 {
			msg = m
		}
		code := strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
		return &apiError{Status: he.Code, Code: code, Message: msg}
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client went away before the answer: nothing failed on this
		// side, and nobody reads the answer. Logged at debug, not as an
		// internal error, so a browser closing a tab raises no alarm.
		s.log.Debug("request cancelled by the client", "method", c.Request().Method, "path", c.Path())
		return errClientClosed
	}
	if dbUnavailable(err) {
		s.log.Warn("database unavailable", "method", c.Request().Method, "path", c.Path(), "err", err)
		return errUnavailable
	}
	if concurrentChange(err) {
		return errConcurrentChange
	}
	if ae := refusedInput(err); ae != nil && c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead {
		// A write whose value PostgreSQL refuses: validation should have
		// caught it, so it is logged (the gap is seen), but answered as the
		// input's fault it is rather than as a 500. A read that fails so is
		// about stored data, not the request, and stays a 500.
		s.log.Warn("database refused input", "method", c.Request().Method, "path", c.Path(),
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "sqlstate", ae.Code, "field", ae.Field)
		return ae
	}
	s.log.Error("internal error", "method", c.Request().Method, "path", c.Path(),
		"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
	return &apiError{http.StatusInternalServerError, "internal", "internal error; the details are in hookline's log", ""}
}

// errClientClosed is the status nginx made the convention for a request the
// client abandoned (499); it reaches the access log, never the client.
var errClientClosed = &apiError{499, "client_closed", "the client closed the request", ""}

// errConcurrentChange answers a write that met a concurrent one on the same
// row and was refused rather than applied to a row that had changed.
var errConcurrentChange = &apiError{http.StatusConflict, "conflict",
	"the record changed while the request ran (the worker recorded a delivery, say); try again", ""}

// concurrentChange reports whether err is PostgreSQL refusing a statement
// for a concurrent change: a serialization failure (among them a row moved
// to another partition by an update that committed first, as a delivery
// recorded as delivered moves to deliveries_delivered while a resend waits
// for it) or a deadlock.
func concurrentChange(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// refusedInput maps PostgreSQL refusing a value (a data exception, a check,
// not-null, unique or foreign-key violation) to a 4xx naming the column
// when PostgreSQL does, or nil for any other error.
func refusedInput(err error) *apiError {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "22"), pgErr.Code == "23514", pgErr.Code == "23502":
		return &apiError{http.StatusUnprocessableEntity, "invalid_value",
			"a value could not be stored (SQLSTATE " + pgErr.Code + "); check the input", pgErr.ColumnName}
	case pgErr.Code == "23505":
		return &apiError{http.StatusConflict, "conflict", "conflicts with an existing record", pgErr.ColumnName}
	case pgErr.Code == "23503":
		return &apiError{http.StatusUnprocessableEntity, "invalid_value", "refers to a record that does not exist", pgErr.ColumnName}
	}
	return nil
}

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/api/") || p == "/healthz" || p == "/readyz"
}
