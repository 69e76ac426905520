package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
)

// One-time values (a new API key, a generated password) travel from a POST
// to the page after its redirect in the encrypted flash cookie, and are
// taken out of the page's flashes to be shown in their own box.
const (
	onceAPIKey       = "once_api_key"
	onceUserPassword = "once_user_password"
)

func takeOnce(m *layout.PageMeta, kind string) (string, bool) {
	for i, f := range m.Flashes {
		if f.Kind == kind {
			m.Flashes = append(m.Flashes[:i:i], m.Flashes[i+1:]...)
			return f.Message, true
		}
	}
	return "", false
}

// addOnce leaves a name and the value shown once beside it (a key, a
// secret, a password) for the page after the redirect.
func (s *Server) addOnce(c echo.Context, kind, name, value string) {
	s.addFlash(c, kind, name+"\x1f"+value)
}

// settingsMeta is a settings page's meta, and the name and value a POST
// left with addOnce under kind ("" when none), taken out of its flashes.
func (s *Server) settingsMeta(c echo.Context, title, kind string) (layout.PageMeta, string, string) {
	m := s.meta(c, title, layout.NavSettings)
	v, _ := takeOnce(&m, kind)
	name, value, _ := strings.Cut(v, "\x1f")
	return m, name, value
}
