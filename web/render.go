package web

import (
	"bytes"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/views/layout"
)

// render writes a templ component: rendered into a buffer first, so a
// render error becomes a proper error page instead of half a 200.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	buf := getRenderBuffer()
	defer putRenderBuffer(buf)
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// renderBuffers keeps a few of render's buffers between requests. The
// endpoints page with a thousand endpoints is megabytes of HTML; growing a
// fresh buffer to that size for every request spent more time zeroing and
// faulting in new memory than rendering. A channel rather than a sync.Pool:
// a pool is emptied by every other garbage collection, and a page this size
// causes one.
var renderBuffers = make(chan *bytes.Buffer, 4)

// maxPooledBuffer bounds what is kept: a rare huge page is not worth
// holding on to.
const maxPooledBuffer = 16 << 20

func getRenderBuffer() *bytes.Buffer {
	select {
	case b := <-renderBuffers:
		return b
	default:
		return new(bytes.Buffer)
	}
}

func putRenderBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	select {
	case renderBuffers <- b:
	default:
	}
}

// meta is the page shell's view model for the request's user.
func (s *Server) meta(c echo.Context, title, nav string) layout.PageMeta {
	p := principalOf(c)
	m := layout.PageMeta{Title: title, Nav: nav, Version: s.cfg.Version, User: p.layoutUser()}
	if p != nil {
		m.CSRFToken = p.CSRF
	}
	m.Flashes = s.takeFlashes(c)
	m.Stale = s.staleNotice(c)
	return m
}

// isHTMX reports whether the request came from htmx (a fragment is wanted).
func isHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// redirectAfterPost answers a successful form post: a 303 to target, or for
// htmx an HX-Location so the page navigates the same way.
func redirectAfterPost(c echo.Context, target string) error {
	if isHTMX(c) {
		c.Response().Header().Set("HX-Location", target)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, target)
}
