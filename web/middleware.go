package web

import (
	"fmt"
	"runtime/debug"
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
