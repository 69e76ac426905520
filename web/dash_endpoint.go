package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/backoff"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/secretbox"
	"github.com/hookline/hookline/worker/signing"
)

// endpointPage: GET /endpoints/:id
func (s *Server) endpointPage(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.endpointWithHealth(ctx, id)
	if err != nil {
		return err
	}
	canOperate := principalOf(c).can(account.RoleOperator)
	health, err := s.healthPanel(ctx, r, canOperate)
	if err != nil {
		return err
	}
	chart, err := s.endpointChart(ctx, r.Endpoint)
	if err != nil {
		return err
	}
	attempts, err := s.attemptLog(ctx, id)
	if err != nil {
		return err
	}
	secrets, err := s.secretsPanel(ctx, id, canOperate)
	if err != nil {
		return err
	}
	p := endpoint.Page{Config: configView(r), Health: health, Chart: chart, Attempts: attempts, Secrets: secrets, CanOperate: canOperate}
	return s.render(c, http.StatusOK, endpoint.View(s.meta(c, r.Endpoint.Name, layout.NavEndpoints), p))
}

// endpointHealthFragment: GET /endpoints/:id/health (live refresh)
func (s *Server) endpointHealthFragment(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	return s.renderHealth(c, id)
}

func (s *Server) renderHealth(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	r, err := s.endpointWithHealth(ctx, id)
	if err != nil {
		return err
	}
	h, err := s.healthPanel(ctx, r, principalOf(c).can(account.RoleOperator))
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoint.HealthPanel(h))
}

// endpointBreaker: POST /endpoints/:id/{pause,resume,force-close} (operator)
func (s *Server) endpointBreaker(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "endpoint")
		if err != nil {
			return err
		}
		if _, err := s.breakerAction(c.Request().Context(), id, action, principalOf(c).actor()); err != nil {
			return err
		}
		if !isHTMX(c) {
			s.addFlash(c, layout.FlashSuccess, "Breaker updated.")
			return c.Redirect(http.StatusSeeOther, "/endpoints/"+strconv.FormatInt(id, 10))
		}
		return s.renderHealth(c, id)
	}
}

// endpointTestFire: POST /endpoints/:id/test (operator) — one signed sample
// event, sent now; the result is shown inline.
func (s *Server) endpointTestFire(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.q.EndpointGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("endpoint")
	}
	if err != nil {
		return err
	}
	in := inputFromEndpoint(e)
	if in.Headers, err = s.box.OpenHeaders(e.ID, e.Headers); err != nil {
		return err
	}
	cfg, _ := validateEndpoint(in, s.guard)
	cfg.URL = e.URL // stored as saved, even if a later rule would refuse it now
	keys, err := s.activeKeys(ctx, id)
	if err != nil {
		return err
	}
	res := s.testFire(ctx, cfg, keys)
	if err := audit(ctx, s.q, principalOf(c).actor(), "endpoint.test_fire", "endpoint", id,
		map[string]any{"outcome": res.Outcome, "status_code": res.StatusCode}); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoint.TestResultView(res))
}

// activeKeys decrypts the endpoint's signing keys, newest first.
func (s *Server) activeKeys(ctx context.Context, id int64) ([][]byte, error) {
	rows, err := s.q.EndpointSecretListActive(ctx, db.EndpointSecretListActiveParams{EndpointID: id})
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, 0, len(rows))
	for _, r := range rows {
		plain, err := s.box.Open(id, r.Ciphertext)
		if err != nil {
			return nil, err
		}
		k, err := signing.ParseSecret(string(plain))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// endpointRotate: POST /endpoints/:id/rotate (operator) — the new secret is
// in this response only.
func (s *Server) endpointRotate(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	overlap, err := strconv.Atoi(c.FormValue("overlap"))
	if err != nil {
		return invalidField("overlap", "choose how long the old secret keeps signing")
	}
	ctx := c.Request().Context()
	secret, until, err := s.rotateSecret(ctx, id, int64(overlap), principalOf(c).actor())
	if err != nil {
		return err
	}
	p, err := s.secretsPanel(ctx, id, true)
	if err != nil {
		return err
	}
	p.NewSecret = secret
	if overlap > 0 {
		p.OldUntil = &until
	}
	return s.render(c, http.StatusOK, endpoint.SecretsPanel(principalOf(c).CSRF, p))
}

func (s *Server) healthPanel(ctx context.Context, r db.EndpointGetWithHealthRow, canOperate bool) (endpoint.Health, error) {
	e, h := r.Endpoint, r.EndpointHealth
	depth, err := s.q.EndpointQueueDepth(ctx, e.ID)
	if err != nil {
		return endpoint.Health{}, err
	}
	now := s.now()
	v := endpoint.Health{
		EndpointID: e.ID, Breaker: breakerData(e, h, now), P50: h.P50Ms, P95: h.P95Ms, P99: h.P99Ms,
		RecentP95: h.RecentP95Ms, Samples: h.SampleCount, Failures: h.ConsecutiveFailures,
		Cooldown: time.Duration(h.CooldownSeconds) * time.Second, PausedUntil: h.PausedUntil,
		Queue: depth.Queued, Dead: depth.Dead, Now: now, CanOperate: canOperate,
	}
	v.Threshold = int32(breaker.DefaultPolicy().ThresholdNow(int(e.FailureThreshold),
		msDuration(h.RecentP95Ms), int(h.RecentSampleCount), msDuration(h.P95Ms), int(h.SampleCount)))
	v.Latency = latencyFlag(h)
	if h.SampleCount > 0 {
		rate := float64(h.OkCount) / float64(h.SampleCount)
		v.SuccessRate = &rate
	}
	if h.LastSuccessAt != nil {
		v.LastSuccess = *h.LastSuccessAt
	}
	if h.LastFailureAt != nil {
		v.LastFailure = *h.LastFailureAt
	}
	return v, nil
}

// endpointChart is 24 h of 15-minute slots from the stored histograms.
func (s *Server) endpointChart(ctx context.Context, e db.Endpoint) (components.ChartData, error) {
	const step = 15 * time.Minute
	const slots = 96
	now := s.now()
	start := now.UTC().Truncate(step).Add(-(slots - 1) * step)
	rows, err := s.q.LatencyRange(ctx, db.LatencyRangeParams{EndpointID: e.ID, ResolutionSeconds: 900, Since: start, Until: now.Add(step)})
	if err != nil {
		return components.ChartData{}, err
	}
	c := components.ChartData{Label: e.Name, Start: start, Step: step, Now: now, Points: make([]components.SparkPoint, slots)}
	for _, r := range rows {
		i := int(r.BucketStart.Sub(start) / step)
		if i < 0 || i >= slots || r.Count == 0 {
			continue
		}
		c.Points[i] = components.SparkPoint{P50: deref0(r.P50Ms), P95: deref0(r.P95Ms), P99: deref0(r.P99Ms), Count: int(r.Count)}
	}
	return c, nil
}

func (s *Server) attemptLog(ctx context.Context, id int64) ([]endpoint.Attempt, error) {
	rows, err := s.q.AttemptListByEndpoint(ctx, db.AttemptListByEndpointParams{EndpointID: id, RowLimit: 50})
	if err != nil {
		return nil, err
	}
	out := make([]endpoint.Attempt, 0, len(rows))
	for _, r := range rows {
		out = append(out, endpoint.Attempt{
			At: r.StartedAt, DeliveryID: r.DeliveryID, EventID: r.EventID.String(), AttemptNo: r.AttemptNo,
			Outcome: r.Outcome, StatusCode: int(deref32(r.StatusCode)), Class: derefS(r.ErrorClass),
			DurationMs: r.DurationMs, Error: derefS(r.Error), Excerpt: derefS(r.ResponseExcerpt),
		})
	}
	return out, nil
}

func (s *Server) secretsPanel(ctx context.Context, id int64, canOperate bool) (endpoint.Secrets, error) {
	rows, err := s.q.EndpointSecretList(ctx, id)
	if err != nil {
		return endpoint.Secrets{}, err
	}
	p := endpoint.Secrets{EndpointID: id, Now: s.now(), CanOperate: canOperate}
	for _, r := range rows {
		p.List = append(p.List, endpoint.Secret{ID: r.ID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	return p, nil
}

func configView(r db.EndpointGetWithHealthRow) endpoint.Config {
	e := r.Endpoint
	c := endpoint.Config{
		ID: e.ID, Name: e.Name, Partner: r.PartnerName, PartnerID: e.PartnerID, Kind: e.Kind, Method: e.Method,
		URL: e.URL, Host: endpointHost(e), EventTypes: e.EventTypes, MaxAttempts: e.MaxAttempts,
		RetryWindow: retryWindow(int(e.MaxAttempts)), TimeoutMs: e.TimeoutMs, MaxInFlight: e.MaxInFlight,
		FailureThreshold: e.FailureThreshold, SuccessBodyContains: e.SuccessBodyContains,
		Enabled: e.Enabled, DisabledReason: e.DisabledReason, CreatedAt: e.CreatedAt, Rate: "unlimited",
	}
	if e.RatePerSec != nil {
		c.Rate = fmt.Sprintf("%g per second, burst %d", *e.RatePerSec, deref32(e.Burst))
	}
	c.HeaderNames, _ = secretbox.HeaderNames(e.Headers)
	sort.Strings(c.HeaderNames)
	return c
}

// retryWindow is the worst-case time a delivery spends backing off before
// it is dead with maxAttempts attempts (from the backoff policy).
func retryWindow(maxAttempts int) string {
	d := backoff.Default().WorstCase(maxAttempts)
	switch {
	case d == 0:
		return "none (a single attempt)"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%.1f days", d.Hours()/24)
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func derefS(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// endpointWithHealth loads an endpoint with its health, or a 404.
func (s *Server) endpointWithHealth(ctx context.Context, id int64) (db.EndpointGetWithHealthRow, error) {
	r, err := s.q.EndpointGetWithHealth(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound("endpoint")
	}
	return r, err
}
