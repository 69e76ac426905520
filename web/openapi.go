package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDoc describes the JSON API. TestOpenAPIMatchesRoutes keeps it true:
// every /api/v1 route is documented and every documented path is routed.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI: GET /api/openapi.json
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPIDoc)
}
