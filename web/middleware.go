package web

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"sort"
	"time"

	"github.com/labstack/echo/v4"
)

// recoverPanics turns a handler panic into a 500 through the error handler,
// logging the stack once (never sending it).
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("handler panic", "path", c.Path(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// logRequests writes one line per request: the route pattern rather than the
// raw URL, so ids and query values (search terms, tokens) stay out of logs.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		route := c.Path()
		if route == "" {
			route = "(no route)"
		}
		s.log.Debug("http request", "method", c.Request().Method, "route", route, "status", status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return nil
	}
}

// rejectUnstorableQuery refuses, with a 422 naming the field, any query
// value PostgreSQL's text would refuse (NUL, bytes that are not UTF-8):
// checked once here for every route rather than in each handler. Query
// strings cost nothing to read; bodies are left to parseForm.
func (s *Server) rejectUnstorableQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := checkValues(c.QueryParams()); err != nil {
			return err
		}
		return next(c)
	}
}

// parseForm parses a form body and refuses values PostgreSQL's text would
// refuse, with a 422 naming the field. It runs only on the routes that take
// forms, after their session check (the sign-in forms: on their route
// line), so nobody unknown gets a body parsed; a body past the family's
// limit is a 413, one that stops arriving a 408.
func (s *Server) parseForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if isFormRequest(c.Request()) {
			form, err := c.FormParams()
			if err != nil {
				return s.bodyError(c.Request(), err)
			}
			if err := checkValues(form); err != nil {
				return err
			}
		}
		return next(c)
	}
}

func isFormRequest(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	return ct == echo.MIMEApplicationForm
}

func checkValues(values url.Values) error {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if msg := textProblem(name); msg != "" {
			return invalidField("", "a field name "+msg)
		}
		for _, v := range values[name] {
			if msg := textProblem(v); msg != "" {
				return invalidField(name, name+" "+msg)
			}
		}
	}
	return nil
}
