package app

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/replica"
	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/web/sso"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
	"github.com/hookline/hookline/worker/tracing"
)

// Config is everything hookline reads from the environment, validated.
type Config struct {
	DatabaseURL   string
	Addr          string
	DataDir       string
	SecretKey     []byte // nil: generated into DataDir (embedded database only)
	SessionKey    []byte // nil: generated into DataDir
	AllowNetworks []netip.Prefix
	// PartnerAllowNetworks opens ranges to URLs partners enter in the
	// portal; empty (the default) means public addresses only, whatever
	// AllowNetworks opens.
	PartnerAllowNetworks []netip.Prefix
	// EgressProxy is the HTTP proxy deliveries leave through
	// (HOOKLINE_EGRESS_PROXY), for fixed source addresses; nil: direct.
	EgressProxy   *url.URL
	MaxBodyBytes  int64
	LogLevel      slog.Level
	LogFormat     string // text | json
	TrustProxy    bool
	ShutdownGrace time.Duration
	Concurrency   int
	Retention     worker.Retention
	SearchKeys    []string // payload fields the event log is searched by
	// Partner portal: how long a sign-in link works and the product name
	// its pages show. PublicURL is the address hookline is reached at, the
	// start of portal links and of the dashboard links in operator
	// notifications ("" = portal links use the address the link API was
	// called at).
	PortalLinkTTL time.Duration
	PortalTitle   string
	PublicURL     string
	// The edge: MetricsAddr serves /metrics on an address of its own
	// ("off": not at all); MetricsToken lets the public listener answer a
	// scrape that carries it; MaxConnections caps open connections.
	MetricsAddr    string
	MetricsToken   string
	MaxConnections int
	// OIDC is single sign-on for the dashboard (nil: off; web/sso).
	OIDC *sso.Config
	// Require2FA: the roles that must sign in to the dashboard with a
	// second factor: "" none, admin, operator (and admins) or all.
	Require2FA string
	// DirectDatabaseURL is a connection that keeps its session, for
	// LISTEN, advisory locks and migrations when DatabaseURL goes through
	// a transaction pooler (db/direct.go); "" = DatabaseURL serves all.
	DirectDatabaseURL string
	// Reads is the read replica for dashboard reads
	// (HOOKLINE_READ_DATABASE_URL, db/replica); URL "" = none.
	Reads replica.Config
	// SMTP is where email channels are sent (HOOKLINE_SMTP_*, read by
	// worker/mail); nil: not configured.
	SMTP *mail.Config
	// Tracing is what the OTEL_* variables ask of traces (nil: off).
	Tracing *tracing.Config
}

// Embedded: no DATABASE_URL, so hookline runs its own PostgreSQL in
// DataDir.
func (c Config) Embedded() bool { return c.DatabaseURL == "" }

// LoadConfig builds the configuration from environment variables, every
// error at once, each naming its variable. It is pure: files (generated
// keys) are handled when the database is opened (resolveKeys).
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:   strings.TrimSpace(getenv("DATABASE_URL")),
		Addr:          envOr(getenv, "HOOKLINE_ADDR", ":8080"),
		DataDir:       envOr(getenv, "HOOKLINE_DATA_DIR", "data"),
		MaxBodyBytes:  262144,
		LogFormat:     envOr(getenv, "HOOKLINE_LOG_FORMAT", "text"),
		ShutdownGrace: 20 * time.Second,
		Concurrency:   256,
		Retention:     worker.DefaultRetention(),
		SearchKeys:    web.DefaultSearchKeys(),
		PortalLinkTTL: time.Hour,
		PortalTitle:   strings.TrimSpace(getenv("HOOKLINE_PORTAL_TITLE")),
		MetricsAddr:   envOr(getenv, "HOOKLINE_METRICS_ADDR", "127.0.0.1:9464"),
		MetricsToken:  strings.TrimSpace(getenv("HOOKLINE_METRICS_TOKEN")),
		Require2FA:    strings.ToLower(strings.TrimSpace(getenv("HOOKLINE_REQUIRE_2FA"))),
	}
	var errs []error
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_ADDR %q: want host:port such as :8080", c.Addr))
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		errs = append(errs, fmt.Errorf("HOOKLINE_ADDR %q: want a port between 1 and 65535, such as :8080", c.Addr))
	}
	var err error
	if c.SecretKey, err = keyFromEnv(getenv, "HOOKLINE_SECRET_KEY"); err != nil {
		errs = append(errs, err)
	}
	if c.SessionKey, err = keyFromEnv(getenv, "HOOKLINE_SESSION_KEY"); err != nil {
		errs = append(errs, err)
	}
	if !c.Embedded() {
		if !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") && !strings.Contains(c.DatabaseURL, "=") {
			errs = append(errs, errors.New("DATABASE_URL: want postgres://user:pass@host:5432/db or key=value form"))
		} else if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			errs = append(errs, errors.New("DATABASE_URL: cannot be parsed (check its syntax)"))
		}
		// Replicas must share the keys, so they cannot be generated per host.
		if c.SecretKey == nil && getenv("HOOKLINE_SECRET_KEY") == "" {
			errs = append(errs, errors.New("HOOKLINE_SECRET_KEY is required with DATABASE_URL (generate one with: openssl rand -base64 32)"))
		}
	}
	if v := getenv("HOOKLINE_ALLOW_NETWORKS"); v != "" {
		if c.AllowNetworks, err = ssrf.ParseAllowList(v); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_ALLOW_NETWORKS: %w", err))
		}
	}
	if v := getenv(ssrf.PartnerVariable); v != "" {
		if c.PartnerAllowNetworks, err = ssrf.ParseAllowList(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (CIDRs such as 203.0.113.0/24, separated by commas)", ssrf.PartnerVariable, err))
		}
	}
	if v := getenv("HOOKLINE_EGRESS_PROXY"); v != "" {
		if c.EgressProxy, err = sender.ParseProxy(v); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_EGRESS_PROXY: %w (http://host:port)", err))
		}
	}
	if v := getenv("HOOKLINE_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 || n > 64<<20 {
			errs = append(errs, fmt.Errorf("HOOKLINE_MAX_BODY_BYTES %q: want a number of bytes between 1024 and 67108864", v))
		}
		c.MaxBodyBytes = n
	}
	if v := getenv("HOOKLINE_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_LOG_LEVEL %q: want debug, info, warn or error", v))
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("HOOKLINE_LOG_FORMAT %q: want text or json", c.LogFormat))
	}
	if v := getenv("HOOKLINE_TRUST_PROXY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_TRUST_PROXY %q: want true or false", v))
		}
		c.TrustProxy = b
	}
	durations := []struct {
		name     string
		dst      *time.Duration
		min, max time.Duration
	}{
		{"HOOKLINE_SHUTDOWN_GRACE", &c.ShutdownGrace, 0, 10 * time.Minute},
		{"HOOKLINE_RETAIN_ATTEMPTS", &c.Retention.Attempts, time.Hour, 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_MINUTE_HISTOGRAMS", &c.Retention.MinuteHistograms, 25 * time.Hour, 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_HOURLY_HISTOGRAMS", &c.Retention.HourlyHistograms, 25 * time.Hour, 5 * 365 * 24 * time.Hour},
		{"HOOKLINE_RETAIN_DELIVERED", &c.Retention.Delivered, time.Hour, 365 * 24 * time.Hour},
		{"HOOKLINE_PORTAL_LINK_TTL", &c.PortalLinkTTL, time.Minute, 7 * 24 * time.Hour},
	}
	for _, d := range durations {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed < d.min || parsed > d.max {
			errs = append(errs, fmt.Errorf("%s %q: want a duration between %s and %s, such as 168h", d.name, v, d.min, d.max))
			continue
		}
		*d.dst = parsed
	}
	if c.MetricsAddr != "off" {
		if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("HOOKLINE_METRICS_ADDR %q: want host:port such as 127.0.0.1:9464, or off", c.MetricsAddr))
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		errs = append(errs, errors.New("HOOKLINE_METRICS_TOKEN: want at least 16 characters (generate one with: openssl rand -hex 16)"))
	}
	if v := getenv("HOOKLINE_MAX_CONNECTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 || n > 1000000 {
			errs = append(errs, fmt.Errorf("HOOKLINE_MAX_CONNECTIONS %q: want a number between 16 and 1000000", v))
		}
		c.MaxConnections = n
	}
	if v := getenv("HOOKLINE_WORKER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			errs = append(errs, fmt.Errorf("HOOKLINE_WORKER_CONCURRENCY %q: want a number between 1 and 10000", v))
		}
		c.Concurrency = n
	}
	if v := strings.TrimRight(strings.TrimSpace(getenv("HOOKLINE_PUBLIC_URL")), "/"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("HOOKLINE_PUBLIC_URL %q: want the address operators and partners reach hookline at, such as https://hooks.example.com", v))
		}
		c.PublicURL = v
	}
	if v := getenv("HOOKLINE_SEARCH_KEYS"); v != "" {
		keys, err := parseSearchKeys(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HOOKLINE_SEARCH_KEYS %q: %w", v, err))
		}
		c.SearchKeys = keys
	}
	if !web.ValidRequire2FA(c.Require2FA) {
		errs = append(errs, fmt.Errorf("HOOKLINE_REQUIRE_2FA %q: want admin, operator (operators and admins), all, or empty for none", c.Require2FA))
	}
	if n := utf8.RuneCountInString(c.PortalTitle); n > 100 {
		errs = append(errs, fmt.Errorf("HOOKLINE_PORTAL_TITLE: want at most 100 characters (got %d)", n))
	}
	var directErrs []error
	c.DirectDatabaseURL, directErrs = db.DirectURLFromEnv(getenv, c.DatabaseURL)
	errs = append(errs, directErrs...)
	var readErrs []error
	c.Reads, readErrs = replica.FromEnv(getenv, c.DatabaseURL)
	errs = append(errs, readErrs...)
	oidc, oidcErrs := sso.FromEnv(getenv, c.PublicURL)
	c.OIDC = oidc
	errs = append(errs, oidcErrs...)
	smtpCfg, smtpErrs := mail.FromEnv(getenv)
	c.SMTP = smtpCfg
	errs = append(errs, smtpErrs...)
	var tracingErrs []error
	c.Tracing, tracingErrs = tracing.FromEnv(getenv)
	errs = append(errs, tracingErrs...)
	return c, errors.Join(errs...)
}

// searchKeyName is what HOOKLINE_SEARCH_KEYS accepts as a payload field
// name: the spellings of identifiers in trackers' and shops' payloads.
var searchKeyName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// maxSearchKeys bounds HOOKLINE_SEARCH_KEYS: each key is looked up in every
// payload at ingest.
const maxSearchKeys = 50

// parseSearchKeys reads a comma-separated list of top-level payload field
// names, each once.
func parseSearchKeys(v string) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			return nil, errors.New("want comma-separated field names such as click_id,order_id (an empty name)")
		case !searchKeyName.MatchString(k):
			return nil, fmt.Errorf("field name %q: want 1-100 letters, digits, _ . : -", k)
		case seen[k]:
			return nil, fmt.Errorf("field name %q given twice", k)
		}
		seen[k] = true
		keys = append(keys, k)
	}
	if len(keys) > maxSearchKeys {
		return nil, fmt.Errorf("at most %d field names", maxSearchKeys)
	}
	return keys, nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}

func keyFromEnv(getenv func(string) string, name string) ([]byte, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%s: want base64 of exactly 32 bytes (generate one with: openssl rand -base64 32)", name)
	}
	return k, nil
}
