package web

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// The edge: what every request meets before routing, authentication or a
// handler. Each route family has its own body limit and deadlines; a body
// is never read (let alone parsed) here, only bounded, so nothing sent by
// someone unknown costs more than its family's limit.

// family is a kind of route, by what its body and answer may cost.
type family int

const (
	familyPage   family = iota // GET pages, fragments, assets, probes: no body
	familyIngest               // POST /api/v1/events and /events/batch
	familyAPI                  // the rest of the JSON API
	familyForm                 // dashboard and portal forms (signed in)
	familySignIn               // forms sent before anyone is known
	familyExport               // GET *.csv: a long answer, streamed
)

func (f family) String() string {
	return [...]string{"page", "ingest", "api", "form", "sign-in", "export"}[f]
}

// Limits are the edge's sizes and deadlines. Zero values take the
// defaults (DefaultLimits).
type Limits struct {
	// IngestBodyBytes bounds POST /api/v1/events and /events/batch (and
	// every other JSON API body): HOOKLINE_MAX_BODY_BYTES.
	IngestBodyBytes int64
	// FormBodyBytes bounds a signed-in form (an endpoint with its
	// headers, templates and filter is a few KiB).
	FormBodyBytes int64
	// SignInBodyBytes bounds the sign-in forms, sent by anyone.
	SignInBodyBytes int64
	// OtherBodyBytes bounds a body nothing reads (a GET with one).
	OtherBodyBytes int64
	// HeaderTimeout is how long a client may take to send its request
	// line and headers; MaxHeaderBytes how much it may send.
	HeaderTimeout  time.Duration
	MaxHeaderBytes int
	// BodyTimeout is how long a client may take to send a body, counted
	// from the end of its headers.
	BodyTimeout time.Duration
	// WriteTimeout bounds a whole answer (handler time included) for pages
	// and the API; IngestWriteTimeout for ingest, which a producer waits
	// on and retries.
	WriteTimeout       time.Duration
	IngestWriteTimeout time.Duration
	// ExportWriteTimeout bounds a streamed export (the audit log as CSV).
	ExportWriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection nobody uses.
	IdleTimeout time.Duration
	// MaxConnections caps open connections (HOOKLINE_MAX_CONNECTIONS).
	MaxConnections int
}

// DefaultLimits are the edge's defaults; README "Running hookline on a
// public address" lists them.
func DefaultLimits() Limits {
	return Limits{
		IngestBodyBytes:    256 << 10,
		FormBodyBytes:      256 << 10,
		SignInBodyBytes:    16 << 10,
		OtherBodyBytes:     16 << 10,
		HeaderTimeout:      10 * time.Second,
		MaxHeaderBytes:     64 << 10,
		BodyTimeout:        30 * time.Second,
		WriteTimeout:       60 * time.Second,
		IngestWriteTimeout: 30 * time.Second,
		ExportWriteTimeout: 10 * time.Minute,
		IdleTimeout:        120 * time.Second,
		MaxConnections:     1024,
	}
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	fillD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.IngestBodyBytes, d.IngestBodyBytes)
	fill(&l.FormBodyBytes, d.FormBodyBytes)
	fill(&l.SignInBodyBytes, d.SignInBodyBytes)
	fill(&l.OtherBodyBytes, d.OtherBodyBytes)
	fillD(&l.HeaderTimeout, d.HeaderTimeout)
	fillD(&l.BodyTimeout, d.BodyTimeout)
	fillD(&l.WriteTimeout, d.WriteTimeout)
	fillD(&l.IngestWriteTimeout, d.IngestWriteTimeout)
	fillD(&l.ExportWriteTimeout, d.ExportWriteTimeout)
	fillD(&l.IdleTimeout, d.IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	return l
}

// familyOf classifies a request by method and path, before routing.
func familyOf(r *http.Request) family {
	p := r.URL.Path
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if strings.HasSuffix(p, ".csv") {
			return familyExport
		}
		return familyPage
	}
	switch {
	case p == "/api/v1/events" || p == "/api/v1/events/batch":
		return familyIngest
	case strings.HasPrefix(p, "/api/"):
		return familyAPI
	case p == "/login" || strings.HasPrefix(p, "/login/") || p == "/portal/signin":
		return familySignIn
	}
	return familyForm
}

func (l Limits) bodyLimit(f family) int64 {
	switch f {
	case familyIngest, familyAPI:
		return l.IngestBodyBytes
	case familyForm:
		return l.FormBodyBytes
	case familySignIn:
		return l.SignInBodyBytes
	}
	return l.OtherBodyBytes
}

func (l Limits) writeTimeout(f family) time.Duration {
	switch f {
	case familyIngest:
		return l.IngestWriteTimeout
	case familyExport:
		return l.ExportWriteTimeout
	}
	return l.WriteTimeout
}

// edge runs before routing on every request: security headers, the
// family's body limit and deadlines, and the refusal of multipart bodies,
// which no route takes.
func (s *Server) edge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		s.securityHeaders(c)
		f := familyOf(r)
		rc := http.NewResponseController(c.Response().Writer)
		// Errors mean the writer cannot take deadlines (a test recorder):
		// the server's own timeouts still apply.
		_ = rc.SetWriteDeadline(time.Now().Add(s.limits.writeTimeout(f)))
		if r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if strings.HasPrefix(ct, "multipart/") {
			return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type",
				"multipart bodies are not accepted: send JSON (API) or an urlencoded form", ""}
		}
		limit := s.limits.bodyLimit(f)
		if r.ContentLength > limit {
			return tooLarge(limit)
		}
		r.Body = http.MaxBytesReader(c.Response().Writer, r.Body, limit)
		// The body deadline holds while the body is read; once it has been
		// read whole the deadline is lifted, so that it does not cut a
		// handler that takes its time afterwards (net/http cancels the
		// request's context when a read after the body fails).
		if err := rc.SetReadDeadline(time.Now().Add(s.limits.BodyTimeout)); err == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		return next(c)
	}
}

// deadlineBody lifts the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// bodyError turns the error of reading or parsing a body into its answer:
// a 413 past the family's limit, a 408 when the client stopped sending.
func (s *Server) bodyError(r *http.Request, err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return &apiError{http.StatusRequestTimeout, "timeout",
			fmt.Sprintf("the request body did not arrive within %s", s.limits.BodyTimeout), ""}
	}
	return badRequest("malformed form data")
}

// securityHeaders are set on every answer. The policy allows no inline
// script, style or handler: the pages' behaviour lives in static/js, their
// look in static/css. Images may be data: URIs (QR codes, inline icons).
func (s *Server) securityHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.secureRequest(c.Request()) {
		// A year, this host only: other hosts of the operator's domain may
		// not speak HTTPS.
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
