package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
)

// Its first fields are endpointInput's on purpose: an endpoint is answered in the words a client sends it.
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
	rulesJSON
	DisabledReason string `json:"disabled_reason"`
	// SendTraceparent: attempts carry a traceparent header while traces
	// are on.
	SendTraceparent bool `json:"send_traceparent"`
	failureBudgetFields
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Health    *healthJSON `json:"health,omitempty"`
	// Egress is what the endpoint's egress settings use, never a secret;
	// absent when it has none (and from the list).
	Egress *egressJSON `json:"egress,omitempty"`
	// Secret is present only in the response that created the endpoint.
	Secret string `json:"secret,omitempty"`
}

// endpointSavedJSON answers a create or an update: the endpoint, and what
// the save-time lint warns about (never blocking; an empty list when none).
type endpointSavedJSON struct {
	endpointJSON
	Warnings []fieldWarning `json:"warnings"`
}

// Alike in shape to deliveryJSON by chance: both list times and counts of their own.
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
		Preset: e.Preset, failureBudgetFields: budgetFields(e), rulesJSON: conversionView(e),
		SendTraceparent: e.SendTraceparent,
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
	if in.Egress != nil {
		if _, _, _, err := validateEgress(*in.Egress, nil, s.now()); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	e, secret, err := s.createEndpoint(ctx, cfg, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	v := endpointView(e)
	v.Secret = secret
	if in.Egress != nil {
		row, err := s.saveEgress(ctx, s.q, e.ID, *in.Egress)
		if err != nil {
			return err
		}
		v.Egress = egressView(row)
	}
	h := healthView(db.EndpointHealth{State: "closed", CooldownSeconds: 300})
	v.Health = h
	warnings, err := s.endpointWarnings(ctx, cfg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, endpointSavedJSON{v, warnings})
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
	v := endpointFullView(r.Endpoint, r.PartnerName, r.EndpointHealth, unsent[id])
	eg, err := s.endpointEgress(ctx, id)
	if err != nil {
		return err
	}
	if eg != nil {
		v.Egress = egressView(*eg)
	}
	return c.JSON(http.StatusOK, v)
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
	eg, err := egressPatch(body)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var egressRow *db.EndpointEgress
	if eg != nil {
		// Checked before anything is saved; saved after the endpoint.
		cur, err := s.endpointEgress(ctx, id)
		if err != nil {
			return err
		}
		if _, _, _, err := validateEgress(*eg, cur, s.now()); err != nil {
			return err
		}
	}
	e, errs, err := s.editEndpoint(c.Request().Context(), id, apiKeyOf(c).actor(), urlSetByOperator,
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
	if eg != nil {
		row, err := s.saveEgress(ctx, s.q, id, *eg)
		if err != nil {
			return err
		}
		egressRow = &row
	} else if egressRow, err = s.endpointEgress(ctx, id); err != nil {
		return err
	}
	warnings, err := s.endpointWarnings(ctx, configForWarnings(e))
	if err != nil {
		return err
	}
	v := endpointView(e)
	if egressRow != nil {
		v.Egress = egressView(*egressRow)
	}
	return c.JSON(http.StatusOK, endpointSavedJSON{v, warnings})
}

// apiRotateSecret: POST /api/v1/endpoints/:id/secrets/rotate {overlap_seconds}
func (s *Server) apiRotateSecret(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	in := struct {
		OverlapSeconds *int64 `json:"overlap_seconds"`
	}{}
	if c.Request().ContentLength != 0 {
		if err := s.decodeJSON(c, &in); err != nil {
			return err
		}
	}
	overlap := int64(defaultOverlap / time.Second)
	if in.OverlapSeconds != nil {
		overlap = *in.OverlapSeconds
	}
	secret, until, err := s.rotateSecret(c.Request().Context(), id, overlap, apiKeyOf(c).actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"secret": secret, "previous_expire_at": until.UTC()})
}

// apiBreaker returns the handler of one breaker action:
// POST /api/v1/endpoints/:id/{pause,resume,force-close}.
func (s *Server) apiBreaker(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "endpoint")
		if err != nil {
			return err
		}
		h, err := s.breakerAction(c.Request().Context(), id, action, apiKeyOf(c).actor())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, healthView(h))
	}
}
