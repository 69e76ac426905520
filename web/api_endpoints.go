package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/signing"
)

type endpointJSON struct {
	ID                  int64             `json:"id"`
	PartnerID           int64             `json:"partner_id"`
	PartnerName         string            `json:"partner_name,omitempty"`
	Name                string            `json:"name"`
	Kind                string            `json:"kind"`
	URL                 string            `json:"url"`
	Method              string            `json:"method"`
	EventTypes          []string          `json:"event_types"`
	Headers             map[string]string `json:"headers"`
	MaxAttempts         int32             `json:"max_attempts"`
	TimeoutMs           int32             `json:"timeout_ms"`
	RatePerSec          *float64          `json:"rate_per_sec"`
	Burst               *int32            `json:"burst"`
	MaxInFlight         int32             `json:"max_in_flight"`
	FailureThreshold    int32             `json:"failure_threshold"`
	SuccessBodyContains string            `json:"success_body_contains"`
	Enabled             bool              `json:"enabled"`
	// Filter is the payload filter, null when every event is delivered.
	Filter json.RawMessage `json:"filter"`
	// Postbacks: macro style, signature parameter ("" = unsigned) and the
	// preset the endpoint was made from ("" = none).
	MacroStyle     string `json:"macro_style"`
	SignatureParam string `json:"signature_param"`
	Preset         string `json:"preset"`
	DisabledReason string `json:"disabled_reason"`
	failureBudgetFields
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Health    *healthJSON `json:"health,omitempty"`
	// Secret is present only in the response that created the endpoint.
	Secret string `json:"secret,omitempty"`
}

// endpointSavedJSON answers a create or an update: the endpoint, and what
// the save-time lint warns about (never blocking; an empty list when none).
type endpointSavedJSON struct {
	endpointJSON
	Warnings []fieldWarning `json:"warnings"`
}

type healthJSON struct {
	State               string     `json:"state"`
	Paused              bool       `json:"paused"`
	PausedUntil         *time.Time `json:"paused_until"`
	ConsecutiveFailures int32      `json:"consecutive_failures"`
	OpenedAt            *time.Time `json:"opened_at"`
	CooldownSeconds     int32      `json:"cooldown_seconds"`
	NextProbeAt         *time.Time `json:"next_probe_at"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	P50Ms               *float64   `json:"p50_ms"`
	P95Ms               *float64   `json:"p95_ms"`
	P99Ms               *float64   `json:"p99_ms"`
	SampleCount         int64      `json:"sample_count"`
	// RecentP95Ms is the P95 of the last 10 minutes: it moves within a
	// minute when an endpoint slows down, long before the 24 h figure.
	RecentP95Ms       *float64 `json:"recent_p95_ms"`
	RecentSampleCount int64    `json:"recent_sample_count"`
	// Latency is "ok", "slow" (P95 > 2 s) or "critical" (P95 > 5 s), the
	// worse of the recent and 24 h figures.
	Latency          string     `json:"latency"`
	StatsRefreshedAt *time.Time `json:"stats_refreshed_at"`
}

func endpointView(e db.Endpoint) endpointJSON {
	headers := maskedHeaders(e.Headers)
	return endpointJSON{
		ID: e.ID, PartnerID: e.PartnerID, Name: e.Name, Kind: e.Kind, URL: e.URL,
		Method: e.Method, EventTypes: e.EventTypes, Headers: headers,
		MaxAttempts: e.MaxAttempts, TimeoutMs: e.TimeoutMs, RatePerSec: e.RatePerSec,
		Burst: e.Burst, MaxInFlight: e.MaxInFlight, FailureThreshold: e.FailureThreshold,
		SuccessBodyContains: e.SuccessBodyContains, Enabled: e.Enabled,
		DisabledReason: e.DisabledReason, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		Filter: filterJSON(e.Filter), MacroStyle: e.MacroStyle, SignatureParam: e.SignatureParam,
		Preset: e.Preset, failureBudgetFields: budgetFields(e),
	}
}

// filterJSON is a stored filter as the API shows it: JSON null for none.
func filterJSON(stored []byte) json.RawMessage {
	if stored == nil {
		return json.RawMessage("null")
	}
	return compactJSON(stored)
}

// endpointFullView is an endpoint with its partner's name and its health,
// as the list and the single-endpoint reads answer.
// Its last failure includes dead deliveries that were never sent (unsent),
// which the breaker's own last_failure_at does not see.
func endpointFullView(e db.Endpoint, partnerName string, h db.EndpointHealth, unsent unsentFailure) endpointJSON {
	v := endpointView(e)
	v.PartnerName = partnerName
	v.Health = healthView(h)
	v.FailureBudget = budgetProgress(e, h, time.Now())
	if !unsent.Last.IsZero() && (v.Health.LastFailureAt == nil || unsent.Last.After(*v.Health.LastFailureAt)) {
		last := unsent.Last
		v.Health.LastFailureAt = &last
	}
	return v
}

func healthView(h db.EndpointHealth) *healthJSON {
	v := &healthJSON{
		State: h.State, Paused: h.Paused, PausedUntil: h.PausedUntil,
		ConsecutiveFailures: h.ConsecutiveFailures, OpenedAt: h.OpenedAt,
		CooldownSeconds: h.CooldownSeconds, LastSuccessAt: h.LastSuccessAt,
		LastFailureAt: h.LastFailureAt, P50Ms: h.P50Ms, P95Ms: h.P95Ms, P99Ms: h.P99Ms,
		SampleCount: h.SampleCount, StatsRefreshedAt: h.StatsRefreshedAt,
		RecentP95Ms: h.RecentP95Ms, RecentSampleCount: h.RecentSampleCount,
		Latency:     string(worstFlag(h.RecentP95Ms, h.RecentSampleCount, h.P95Ms, h.SampleCount)),
		NextProbeAt: nextProbeAt(h),
	}
	return v
}

func msDuration(ms *float64) time.Duration {
	if ms == nil {
		return 0
	}
	return time.Duration(*ms * float64(time.Millisecond))
}

// apiEndpointCreate: POST /api/v1/endpoints → 201 with the first signing
// secret, which is never shown again.
func (s *Server) apiEndpointCreate(c echo.Context) error {
	var in endpointInput
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	cfg, errs := validateEndpoint(in, s.guard)
	if len(errs) > 0 {
		return invalidField(errs[0].Field, errs[0].Message)
	}
	ctx := c.Request().Context()
	e, secret, err := s.createEndpoint(ctx, cfg, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	v := endpointView(e)
	v.Secret = secret
	h := healthView(db.EndpointHealth{State: "closed", CooldownSeconds: 300})
	v.Health = h
	warnings, err := s.endpointWarnings(ctx, cfg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, endpointSavedJSON{v, warnings})
}

// createEndpoint stores the endpoint, its health row and its first secret in
// one transaction, audited.
func (s *Server) createEndpoint(ctx context.Context, cfg endpointConfig, actor string) (db.Endpoint, string, error) {
	secret, err := signing.NewSecret(rand.Reader)
	if err != nil {
		return db.Endpoint{}, "", err
	}
	var e db.Endpoint
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		p, err := q.PartnerGet(ctx, cfg.PartnerID)
		if errors.Is(err, pgx.ErrNoRows) {
			return invalidField("partner_id", "no partner with this id")
		}
		if err != nil {
			return err
		}
		if p.ArchivedAt != nil {
			return invalidField("partner_id", "the partner is archived; unarchive it first")
		}
		e, err = q.EndpointCreate(ctx, db.EndpointCreateParams{
			PartnerID: cfg.PartnerID, Name: cfg.Name, Kind: cfg.Kind, URL: cfg.URL,
			Method: cfg.Method, EventTypes: cfg.EventTypes, Headers: json.RawMessage(`{}`),
			MaxAttempts: cfg.MaxAttempts, TimeoutMs: cfg.TimeoutMs, RatePerSec: cfg.RatePerSec,
			Burst: cfg.Burst, MaxInFlight: cfg.MaxInFlight, FailureThreshold: cfg.FailureThreshold,
			SuccessBodyContains: cfg.SuccessBodyContains, Enabled: cfg.Enabled, Filter: cfg.Filter,
			MacroStyle: ptrTo(string(cfg.MacroStyle)), SignatureParam: cfg.SignatureParam, Preset: cfg.Preset,
		})
		if isUniqueViolation(err) {
			return conflict("name", "this partner already has an endpoint with this name")
		}
		if err != nil {
			return err
		}
		if e, err = s.saveFailureBudget(ctx, q, nil, e, cfg); err != nil {
			return err
		}
		if len(cfg.Headers) > 0 {
			headers, err := s.box.SealHeaders(e.ID, cfg.Headers)
			if err != nil {
				return err
			}
			if e, err = q.EndpointSetHeaders(ctx, db.EndpointSetHeadersParams{ID: e.ID, Headers: headers}); err != nil {
				return err
			}
		}
		if err := q.EndpointHealthCreate(ctx, e.ID); err != nil {
			return err
		}
		sealed, err := s.box.Seal(e.ID, []byte(secret))
		if err != nil {
			return err
		}
		if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: e.ID, Ciphertext: sealed}); err != nil {
			return err
		}
		return audit(ctx, q, actor, "endpoint.create", "endpoint", e.ID,
			map[string]any{"name": e.Name, "kind": e.Kind, "partner_id": e.PartnerID})
	})
	if err != nil {
		return db.Endpoint{}, "", err
	}
	return e, secret, nil
}

// apiEndpointList: GET /api/v1/endpoints[?partner_id=]
func (s *Server) apiEndpointList(c echo.Context) error {
	var partnerID *int64
	if v := c.QueryParam("partner_id"); v != "" {
		id, ok := parseID(v)
		if !ok {
			return invalidField("partner_id", "must be a positive integer")
		}
		partnerID = &id
	}
	ctx := c.Request().Context()
	rows, err := s.q.EndpointListWithHealth(ctx, partnerID)
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	now := s.now()
	unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour), nil)
	if err != nil {
		return err
	}
	out := make([]endpointJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, endpointFullView(r.Endpoint, r.PartnerName, r.EndpointHealth, unsent[r.Endpoint.ID]))
	}
	return c.JSON(http.StatusOK, map[string]any{"endpoints": out})
}

// apiEndpointGet: GET /api/v1/endpoints/:id — configuration and health.
func (s *Server) apiEndpointGet(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.endpointWithHealth(ctx, id)
	if err != nil {
		return err
	}
	now := s.now()
	unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour), &id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, endpointFullView(r.Endpoint, r.PartnerName, r.EndpointHealth, unsent[id]))
}

// apiEndpointPatch: PATCH /api/v1/endpoints/:id — the given fields are
// merged onto the stored configuration, and the result is validated whole.
// Headers merge by name: a value sets one, null deletes one, "********"
// keeps the stored value.
func (s *Server) apiEndpointPatch(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	e, errs, err := s.editEndpoint(c.Request().Context(), id, apiKeyOf(c).actor(),
		func(cur db.Endpoint) (endpointInput, []fieldError, error) {
			in := inputFromEndpoint(cur)
			base := in.Headers
			in.Headers = nil
			if err := decodeStrict(body, &in); err != nil {
				return in, nil, err
			}
			// A null header value deletes that header (JSON merge patch);
			// decoded into in.Headers it would read as "".
			var nulls struct {
				Headers map[string]*string `json:"headers"`
			}
			_ = json.Unmarshal(body, &nulls) // the strict decode above accepted it
			in.Headers = mergeHeaders(base, in.Headers)
			for name, v := range nulls.Headers {
				if v == nil {
					deleteHeader(in.Headers, name)
				}
			}
			return in, nil, nil
		})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return invalidField(errs[0].Field, errs[0].Message)
	}
	warnings, err := s.endpointWarnings(c.Request().Context(), configForWarnings(e))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, endpointSavedJSON{endpointView(e), warnings})
}

// editEndpoint changes an endpoint under its row lock (PATCH and the edit
// form): build turns the stored endpoint into the new input, with any
// problems found reading it; the whole result is validated before anything
// is written. It returns the updated endpoint, or the problems (immutable
// fields first, then one per field) with nothing written; a conflict with
// another endpoint is an *apiError.
func (s *Server) editEndpoint(ctx context.Context, id int64, actor string, build func(cur db.Endpoint) (endpointInput, []fieldError, error)) (db.Endpoint, []fieldError, error) {
	var e db.Endpoint
	var problems []fieldError
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		cur, err := q.EndpointGetForUpdate(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("endpoint")
		}
		if err != nil {
			return err
		}
		in, readErrs, err := build(cur)
		if err != nil {
			return err
		}
		stored, err := s.unmaskHeaders(cur, in.Headers)
		if err != nil {
			return err
		}
		if in.PartnerID != cur.PartnerID {
			problems = append(problems, fieldError{"partner_id", "cannot be changed; create a new endpoint for the other partner"})
		}
		if in.Kind != cur.Kind {
			problems = append(problems, fieldError{"kind", "cannot be changed; create a new endpoint of the other kind"})
		}
		cfg, errs := validateEndpoint(in, s.guard)
		seen := map[string]bool{}
		for _, fe := range append(readErrs, errs...) {
			if !seen[fe.Field] {
				seen[fe.Field] = true
				problems = append(problems, fe)
			}
		}
		if len(problems) > 0 {
			return errFormInvalid
		}
		// A name another endpoint of the partner has is a conflict (409),
		// returned as the error; the form shows it next to the field.
		e, err = s.updateEndpoint(ctx, q, cur, stored, cfg, actor)
		return err
	})
	if errors.Is(err, errFormInvalid) {
		return db.Endpoint{}, problems, nil
	}
	return e, nil, err
}

// errFormInvalid rolls back an edit whose input has problems.
var errFormInvalid = errors.New("input has errors")

// updateEndpoint writes a validated configuration over cur and audits which
// fields changed; storedHeaders are cur's custom headers in plain text.
// Re-enabling clears the disabled reason.
func (s *Server) updateEndpoint(ctx context.Context, q *db.Queries, cur db.Endpoint, storedHeaders map[string]string, cfg endpointConfig, actor string) (db.Endpoint, error) {
	headers := cur.Headers
	headersChanged := !maps.Equal(storedHeaders, cfg.Headers)
	if headersChanged {
		var err error
		if headers, err = s.box.SealHeaders(cur.ID, cfg.Headers); err != nil {
			return db.Endpoint{}, err
		}
	}
	reason := cur.DisabledReason
	if cfg.Enabled {
		reason = ""
	} else if cur.Enabled {
		reason = "disabled by " + actor
	}
	e, err := q.EndpointUpdate(ctx, db.EndpointUpdateParams{
		ID: cur.ID, Name: cfg.Name, URL: cfg.URL, Method: cfg.Method, EventTypes: cfg.EventTypes,
		Headers: headers, MaxAttempts: cfg.MaxAttempts, TimeoutMs: cfg.TimeoutMs,
		RatePerSec: cfg.RatePerSec, Burst: cfg.Burst, MaxInFlight: cfg.MaxInFlight,
		FailureThreshold: cfg.FailureThreshold, SuccessBodyContains: cfg.SuccessBodyContains,
		Enabled: cfg.Enabled, DisabledReason: reason, Filter: cfg.Filter,
		MacroStyle: ptrTo(string(cfg.MacroStyle)), SignatureParam: ptrTo(cfg.SignatureParam), Preset: ptrTo(cfg.Preset),
	})
	if isUniqueViolation(err) {
		return db.Endpoint{}, conflict("name", "this partner already has an endpoint with this name")
	}
	if err != nil {
		return db.Endpoint{}, err
	}
	if e, err = s.saveFailureBudget(ctx, q, &cur, e, cfg); err != nil {
		return db.Endpoint{}, err
	}
	return e, audit(ctx, q, actor, "endpoint.update", "endpoint", e.ID,
		map[string]any{"changed": changedFields(cur, e, headersChanged)})
}

// changedFields names the configuration fields that differ, for the audit
// log (names only: values may be credentials).
func changedFields(a, b db.Endpoint, headers bool) []string {
	var out []string
	add := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	add("name", a.Name != b.Name)
	add("url", a.URL != b.URL)
	add("method", a.Method != b.Method)
	add("event_types", fmt.Sprint(a.EventTypes) != fmt.Sprint(b.EventTypes))
	add("headers", headers) // sealed values differ on every write; compared in plain text
	add("max_attempts", a.MaxAttempts != b.MaxAttempts)
	add("timeout_ms", a.TimeoutMs != b.TimeoutMs)
	add("rate_per_sec", fmt.Sprint(derefF(a.RatePerSec)) != fmt.Sprint(derefF(b.RatePerSec)))
	add("burst", fmt.Sprint(derefI(a.Burst)) != fmt.Sprint(derefI(b.Burst)))
	add("max_in_flight", a.MaxInFlight != b.MaxInFlight)
	add("failure_threshold", a.FailureThreshold != b.FailureThreshold)
	add("success_body_contains", a.SuccessBodyContains != b.SuccessBodyContains)
	add("enabled", a.Enabled != b.Enabled)
	add("filter", !bytes.Equal(a.Filter, b.Filter))
	add("macro_style", a.MacroStyle != b.MacroStyle)
	add("signature_param", a.SignatureParam != b.SignatureParam)
	add("preset", a.Preset != b.Preset)
	add("disable_after_failures", a.DisableAfterFailures != b.DisableAfterFailures)
	add("disable_after_hours", a.DisableAfterHours != b.DisableAfterHours)
	if out == nil {
		out = []string{}
	}
	return out
}

func derefF(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefI(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

func ptrTo[T any](v T) *T { return &v }
