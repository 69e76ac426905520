package web

import (
	"fmt"
	"html"

	"github.com/labstack/echo/v4"
)

// renderErrorPage answers a dashboard request with a short, friendly page.
func (s *Server) renderErrorPage(c echo.Context, ae *apiError) {
	body := fmt.Sprintf(`<!doctype html><html lang="en"><meta charset="utf-8"><title>%d · hookline</title><body><main><h1>%d</h1><p>%s</p><p><a href="/">Back to the overview</a></p></main></body></html>`,
		ae.Status, ae.Status, html.EscapeString(ae.Message))
	_ = c.HTML(ae.Status, body)
}
