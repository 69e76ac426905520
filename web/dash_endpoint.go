package web

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/backoff"
)

// endpointPage: GET /endpoints/:id[?attempts=failed][&status_code=N]
// [&window=1h|24h|7d][&before=CURSOR]. The query chooses the attempt log's
// filter and page; an htmx request aimed at the log gets the log alone.
func (s *Server) endpointPage(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	page, err := attemptPageOf(c)
	if err != nil {
		return err
	}
	if isHTMX(c) && c.Request().Header.Get("HX-Target") == endpoint.AttemptsID {
		if _, err := s.endpointWithHealth(ctx, id); err != nil {
			return err
		}
		attempts, err := s.attemptLog(ctx, id, page)
		if err != nil {
			return err
		}
		return s.render(c, http.StatusOK, endpoint.AttemptsPanel(attempts))
	}
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
	attempts, err := s.attemptLog(ctx, id, page)
	if err != nil {
		return err
	}
	secrets, err := s.secretsPanel(ctx, id, canOperate)
	if err != nil {
		return err
	}
	p := endpoint.PageData{Config: configView(r), Health: health, Chart: chart, Attempts: attempts, Secrets: secrets, CanOperate: canOperate}
	if p.Egress, err = s.egressPanel(ctx, id, false, canOperate); err != nil {
		return err
	}
	p.Signed = signedPostbackView(r.Endpoint)
	return s.render(c, http.StatusOK, endpoint.Page(s.meta(c, r.Endpoint.Name, layout.NavEndpoints), p))
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
	cfg, keys, err := s.savedTestFireConfig(ctx, id)
	if err != nil {
		return err
	}
	o := fireOpts{partner: cfg.URLSetBy == urlSetByPartner}
	if o.egress, err = s.fireEgress(ctx, id, true); err != nil {
		return err
	}
	res := s.testFire(ctx, cfg, keys, o)
	if err := audit(ctx, s.q, principalOf(c).actor(), "endpoint.test_fire", "endpoint", id,
		map[string]any{"outcome": res.Outcome, "status_code": res.StatusCode}); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoint.TestResultView(res))
}

// endpointRotate: POST /endpoints/:id/rotate (operator) — the new secret is
// in this response only.
func (s *Server) endpointRotate(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	secret, oldUntil, err := s.rotateFromForm(c, id, principalOf(c).actor())
	if err != nil {
		return err
	}
	p, err := s.secretsPanel(c.Request().Context(), id, true)
	if err != nil {
		return err
	}
	p.NewSecret, p.OldUntil = secret, oldUntil
	return s.render(c, http.StatusOK, endpoint.SecretsPanel(principalOf(c).CSRF, p))
}

// attemptPageSize is how many attempts one page of the log shows.
const attemptPageSize = 50

// attemptPage chooses a page of the attempt log: failures only or every
// attempt, and the cursor it starts after (nil for the newest).
type attemptPage struct {
	endpoint.AttemptFilter
	Before *attemptCursor
}

// attemptWindows are the attempt log's time ranges.
var attemptWindows = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

// attemptCursor is the last attempt of a page (its start and id, the log's
// order): the next page starts after it.
type attemptCursor struct {
	StartedAt time.Time
	ID        int64
}

// String is the cursor as a query value: "<unix microseconds>_<id>"
// (PostgreSQL keeps microseconds, so the round trip is exact).
func (k attemptCursor) String() string {
	return strconv.FormatInt(k.StartedAt.UnixMicro(), 10) + "_" + strconv.FormatInt(k.ID, 10)
}

func parseAttemptCursor(v string) (attemptCursor, bool) {
	at, id, ok := strings.Cut(v, "_")
	if !ok {
		return attemptCursor{}, false
	}
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || us < 0 || n <= 0 {
		return attemptCursor{}, false
	}
	return attemptCursor{StartedAt: time.UnixMicro(us).UTC(), ID: n}, true
}

func attemptPageOf(c echo.Context) (attemptPage, error) {
	var p attemptPage
	switch c.QueryParam("attempts") {
	case "", "all":
	case "failed":
		p.FailuresOnly = true
	default:
		return p, invalidField("attempts", `must be "all" or "failed"`)
	}
	if v := c.QueryParam("status_code"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			return p, invalidField("status_code", "must be an HTTP status code, 100 to 599")
		}
		p.StatusCode = n
	}
	if v := c.QueryParam("window"); v != "" {
		if _, ok := attemptWindows[v]; !ok {
			return p, invalidField("window", "must be 1h, 24h or 7d")
		}
		p.Window = v
	}
	if v := c.QueryParam("before"); v != "" {
		k, ok := parseAttemptCursor(v)
		if !ok {
			return p, invalidField("before", "not a page of attempts")
		}
		p.Before = &k
	}
	return p, nil
}

// attemptLog reads one page of the attempt log, and one attempt more to
// know whether an older page exists.
func (s *Server) attemptLog(ctx context.Context, id int64, page attemptPage) (endpoint.Attempts, error) {
	arg := db.AttemptPageByEndpointParams{EndpointID: id, FailuresOnly: page.FailuresOnly, RowLimit: attemptPageSize + 1}
	if page.StatusCode != 0 {
		code := int32(page.StatusCode)
		arg.StatusCode = &code
	}
	if w, ok := attemptWindows[page.Window]; ok {
		since := s.now().Add(-w)
		arg.Since = &since
	}
	out := endpoint.Attempts{EndpointID: id, AttemptFilter: page.AttemptFilter}
	if page.Before != nil {
		arg.BeforeStartedAt, arg.BeforeID = &page.Before.StartedAt, &page.Before.ID
		out.Before = page.Before.String()
	}
	rows, err := s.q.AttemptPageByEndpoint(ctx, arg)
	if err != nil {
		return endpoint.Attempts{}, fmt.Errorf("attempt log: %w", err)
	}
	if len(rows) > attemptPageSize {
		rows = rows[:attemptPageSize]
		last := rows[len(rows)-1]
		out.Older = attemptCursor{StartedAt: last.StartedAt, ID: last.ID}.String()
	}
	out.List = make([]endpoint.Attempt, 0, len(rows))
	for _, r := range rows {
		out.List = append(out.List, endpoint.Attempt{
			At: r.StartedAt, DeliveryID: r.DeliveryID, EventID: r.EventID.String(), AttemptNo: r.AttemptNo,
			Outcome: r.Outcome, StatusCode: int(deref(r.StatusCode)), Class: deref(r.ErrorClass),
			DurationMs: r.DurationMs, Error: deref(r.Error), Excerpt: deref(r.ResponseExcerpt),
		})
	}
	return out, nil
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
		c.Rate = fmt.Sprintf("%g per second, burst %d", *e.RatePerSec, deref(e.Burst))
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

// endpointEnable: POST /endpoints/:id/enable (operator) — enables a
// disabled endpoint again, as the edit form's checkbox does (audited, the
// budget starts afresh, the held deliveries flow).
func (s *Server) endpointEnable(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	_, problems, err := s.editEndpoint(c.Request().Context(), id, principalOf(c).actor(), urlSetByOperator,
		func(cur db.Endpoint) (endpointInput, []fieldError, error) {
			in := inputFromEndpoint(cur)
			on := true
			in.Enabled = &on
			return in, nil, nil
		})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return conflict("", fmt.Sprintf("the endpoint's settings need fixing first (%s: %s): use Edit", problems[0].Field, problems[0].Message))
	}
	if !isHTMX(c) {
		s.addFlash(c, layout.FlashSuccess, "Endpoint enabled: its queued deliveries are being sent.")
		return c.Redirect(http.StatusSeeOther, "/endpoints/"+strconv.FormatInt(id, 10))
	}
	return s.renderHealth(c, id)
}
