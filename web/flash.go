package web

import (
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
)

// Flash messages survive one redirect in their own short-lived, encrypted
// cookie (post/redirect/get: "Endpoint saved" shows on the page after).
const flashCookie = "hookline_flash"

func (s *Server) addFlash(c echo.Context, kind, message string) {
	sess, _ := s.sessions.Get(c.Request(), flashCookie)
	if sess == nil {
		sess = sessions.NewSession(s.sessions, flashCookie)
	}
	sess.AddFlash(kind + "\x00" + message)
	sess.Options = s.cookieOptions(c.Request(), 300)
	_ = sess.Save(c.Request(), c.Response())
}

func (s *Server) takeFlashes(c echo.Context) []layout.Flash {
	cookie, err := c.Cookie(flashCookie)
	if err != nil || cookie.Value == "" {
		return nil
	}
	sess, err := s.sessions.Get(c.Request(), flashCookie)
	if err != nil {
		return nil
	}
	raw := sess.Flashes()
	if len(raw) == 0 {
		return nil
	}
	sess.Options = s.cookieOptions(c.Request(), -1)
	_ = sess.Save(c.Request(), c.Response())
	out := make([]layout.Flash, 0, len(raw))
	for _, f := range raw {
		str, _ := f.(string)
		for i := 0; i < len(str); i++ {
			if str[i] == 0 {
				out = append(out, layout.Flash{Kind: str[:i], Message: str[i+1:]})
				break
			}
		}
	}
	return out
}
