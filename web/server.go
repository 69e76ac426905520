// Package web is hookline's HTTP front: the JSON API for producers and
// automation, the operator dashboard, and the health, readiness and metrics
// endpoints. It changes rows; the worker picks them up. It never runs the
// delivery loop itself.
package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/sessions"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/replica"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/web/sso"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// Config wires a Server. Pool, SecretKey, SessionKey and Guard are required.
type Config struct {
	Pool      *pgxpool.Pool
	SecretKey []byte // encrypts endpoint signing secrets (when Box is nil)
	// Box seals and opens endpoint secrets and custom header values; the
	// process builds one and shares it with the worker. Built from
	// SecretKey when nil.
	Box        *secretbox.Box
	SessionKey []byte // authenticates and encrypts session cookies
	Guard      *ssrf.Guard
	// PartnerGuard judges the URLs partners enter in the portal, when they
	// are saved and when they are dialled (HOOKLINE_PARTNER_ALLOW_NETWORKS);
	// public addresses only when nil, whatever Guard allows.
	PartnerGuard *ssrf.Guard
	// Resolver looks up the addresses of a host a partner enters and of a
	// test fire's destination; net.DefaultResolver when nil (tests give
	// one that answers without DNS).
	Resolver     Resolver
	MaxBodyBytes int64
	// Limits are the edge's body limits and deadlines (DefaultLimits for
	// zero fields); MaxBodyBytes, when set, is the API's body limit.
	Limits     Limits
	TrustProxy bool // honour X-Forwarded-Proto/-For from a reverse proxy
	// MetricsToken, when set, lets /metrics on the public listener answer
	// a scrape with "Authorization: Bearer <token>". Without it the public
	// listener does not serve /metrics at all: MetricsHandler serves it on
	// its own address.
	MetricsToken string
	Version      string
	Logger       *slog.Logger
	Now          func() time.Time // injected clock; time.Now when nil
	// Registry collects the process's metrics, served at /metrics; the
	// server adds the queue collector. A private one when nil.
	Registry *prometheus.Registry
	// SearchKeys are the top-level payload fields stored at ingest for
	// the event log's search; DefaultSearchKeys when nil.
	SearchKeys []string
	// Portal configures the partner portal (link lifetime, title).
	Portal PortalConfig
	// Require2FA names the roles that must sign in with a second factor
	// (HOOKLINE_REQUIRE_2FA): "" none, "admin", "operator" (and admins) or
	// "all".
	Require2FA string
	// Worker is the delivery worker of this process, when it has one
	// (hookline serve). An ingest wakes it in process once committed, and
	// sends no wake-up NOTIFY while it claims from every shard: no other
	// replica could claim the deliveries then.
	Worker LocalWorker
	// OIDC turns on single sign-on through an OpenID Connect provider
	// (nil: password sign-in only).
	OIDC *sso.Config
	// Reads is the read replica the dashboard's heavy reads go to
	// (HOOKLINE_READ_DATABASE_URL; nil: none), see reads.go.
	Reads *replica.Reads
	// Tracer makes the ingest requests' and fan-outs' spans; nil is
	// traces off (ingest_trace.go).
	Tracer *tracing.Tracer
	// EgressProxy is the default egress proxy (HOOKLINE_EGRESS_PROXY), as
	// the worker has it: test fires leave through it as deliveries do, and
	// the endpoint page names it. nil: direct.
	EgressProxy *url.URL
}

// LocalWorker is what an ingest needs of a worker in the same process
// (worker.Worker implements it).
type LocalWorker interface {
	// ClaimsEverything: no other worker may claim any delivery now.
	ClaimsEverything() bool
	// WakeFor: deliveries to these endpoints were just committed.
	WakeFor(endpointIDs ...int64)
}

// Resolver is the host lookup the web server needs (*net.Resolver
// implements it).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Server is the HTTP handler for everything hookline serves.
type Server struct {
	e     *echo.Echo
	pool  *pgxpool.Pool
	q     *db.Queries
	box   *secretbox.Box
	guard *ssrf.Guard
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	// injected: tests gave a clock, which statements that set a time the
	// worker compares with its own now must use too (see dbNow).
	injected bool

	chartCache
	filters  filter.Cache // compiled endpoint payload filters, by text
	sessions *sessions.CookieStore
	throttle *loginThrottle
	limits   Limits
	sso      *sso.Client // nil without single sign-on
	send     *sender.Sender
	// partnerGuard and partnerSend judge and dial what partners set (see
	// destination); resolver looks hosts up.
	partnerGuard *ssrf.Guard
	partnerSend  *sender.Sender
	resolver     Resolver
	// watchedAt is when this replica's alert watch last held the lock
	// and finished (UnixNano; 0 before): see watchAlertsOnce.
	watchedAt atomic.Int64
}

// New builds the server and its route table.
func New(cfg Config) (*Server, error) {
	if cfg.Pool == nil || cfg.Guard == nil {
		return nil, errors.New("web: Pool and Guard are required")
	}
	box := cfg.Box
	if box == nil {
		b, err := secretbox.New(cfg.SecretKey, nil)
		if err != nil {
			return nil, err
		}
		box = b
	}
	if len(cfg.SessionKey) != 32 {
		return nil, errors.New("web: SessionKey must be 32 bytes")
	}
	if !ValidRequire2FA(cfg.Require2FA) {
		return nil, fmt.Errorf("web: Require2FA %q: want admin, operator, all or empty", cfg.Require2FA)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 262144
	}
	if cfg.Limits.IngestBodyBytes <= 0 {
		cfg.Limits.IngestBodyBytes = cfg.MaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	injected := cfg.Now != nil
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.PartnerGuard == nil {
		cfg.PartnerGuard = ssrf.NewPartner(nil)
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	s := &Server{
		e:        echo.New(),
		pool:     cfg.Pool,
		injected: injected,
		q:        db.New(cfg.Pool),
		box:      box,
		guard:    cfg.Guard,
		cfg:      cfg,
		resolver: cfg.Resolver,
		log:      cfg.Logger,
		now:      cfg.Now,
	}
	s.limits = cfg.Limits.withDefaults()
	s.sessions = newCookieStore(cfg.SessionKey)
	s.throttle = newLoginThrottle()
	var err error
	if cfg.OIDC != nil {
		oc := *cfg.OIDC
		if oc.Now == nil {
			oc.Now = cfg.Now
		}
		if s.sso, err = sso.New(oc); err != nil {
			return nil, err
		}
	}
	s.send, err = sender.New(sender.Options{Guard: cfg.Guard, UserAgent: "hookline/" + cfg.Version, Now: cfg.Now, Proxy: cfg.EgressProxy})
	if err != nil {
		return nil, err
	}
	s.partnerGuard = cfg.PartnerGuard
	s.partnerSend, err = sender.New(sender.Options{Guard: cfg.PartnerGuard, UserAgent: "hookline/" + cfg.Version, Now: cfg.Now, Proxy: cfg.EgressProxy})
	if err != nil {
		return nil, err
	}
	s.e.HideBanner = true
	s.e.HidePort = true
	s.e.HTTPErrorHandler = s.handleError
	if cfg.TrustProxy {
		s.e.IPExtractor = echo.ExtractIPFromXFFHeader()
	} else {
		s.e.IPExtractor = echo.ExtractIPDirect()
	}
	if err := cfg.Registry.Register(newQueueCollector(s)); err != nil {
		return nil, fmt.Errorf("web: metrics: %w", err)
	}
	if cfg.Reads != nil {
		// The handlers' statements go where the request's context says
		// (reads.go): the primary unless its route reads from the replica.
		s.q = db.New(readRouter{cfg.Pool})
		if err := cfg.Registry.Register(newReplicaCollector(cfg.Reads)); err != nil {
			return nil, fmt.Errorf("web: metrics: %w", err)
		}
	}
	s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Routes lists the registered routes (method and path pattern).
func (s *Server) Routes() []*echo.Route { return s.e.Routes() }

// MetricsHandler serves /metrics in the Prometheus text format, for a
// listener of its own (HOOKLINE_METRICS_ADDR): the public listener never
// answers it anonymously, because it names endpoints and their breakers.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{ErrorLog: nil, Timeout: 10 * time.Second})
}

// metricsOnPublic serves /metrics on the public listener only to a scrape
// that carries the metrics token; without a token configured the route is
// a 404, as if it were not there.
func (s *Server) metricsOnPublic() echo.HandlerFunc {
	h := echo.WrapHandler(s.MetricsHandler())
	return func(c echo.Context) error {
		want := s.cfg.MetricsToken
		if want == "" {
			return echo.ErrNotFound
		}
		scheme, got, ok := strings.Cut(c.Request().Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) != 1 {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="hookline metrics"`)
			return &apiError{http.StatusUnauthorized, "unauthorized", "/metrics needs Authorization: Bearer <HOOKLINE_METRICS_TOKEN>", ""}
		}
		return h(c)
	}
}
