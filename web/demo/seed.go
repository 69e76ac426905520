package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// endpointInput is the body of POST /api/v1/endpoints (EndpointInput in
// web/openapi.json). Zero optional fields are omitted so hookline applies
// its own defaults.
// Its fields mirror web's endpointInput on purpose: the demo is a client of the public API, not of the server's code.
type endpointInput struct {
	PartnerID           int64             `json:"partner_id"`
	Name                string            `json:"name"`
	Kind                string            `json:"kind"`
	URL                 string            `json:"url"`
	EventTypes          []string          `json:"event_types"`
	Headers             map[string]string `json:"headers,omitempty"`
	MaxAttempts         int               `json:"max_attempts,omitempty"`
	TimeoutMs           int               `json:"timeout_ms,omitempty"`
	FailureThreshold    int               `json:"failure_threshold,omitempty"`
	SuccessBodyContains string            `json:"success_body_contains,omitempty"`
}

// idName is the part of a Partner or Endpoint answer Seed needs.
type idName struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Seed creates the demo partners and their endpoints through the HTTP API
// (POST /api/v1/partners, POST /api/v1/endpoints) and returns the endpoint
// ids by receiver name (AcmeOrders, LegacyCRM, ...).
//
//   - Acme Shop: webhooks orders (fast) and invoices (slowing down).
//   - Clickwave Media: Keitaro- and Voluum-style postbacks to trackers that
//     answer "duplicate" to a conversion posted twice (success_body_contains "OK").
//   - LegacyCRM: a webhook answered with 500s (max_attempts 2, breaker at 10 failures).
//   - PartnerAuth: a webhook answered with 401s.
//   - BurstyAPI: a webhook to a rate-limited receiver, without a rate limit.
//   - Flaky Affiliates: postbacks that fail about 5 % of the time, binom with
//     3 attempts and s2s with 1 (its dead letters replay successfully).
//
// Seed is idempotent: a partner or endpoint that already exists (409) is
// looked up and reused. A reused endpoint keeps its settings, which an
// operator may have tuned, but gets the current receiver URL, since the
// receivers listen on a new port each run.
//
// hookline must let its SSRF guard reach loopback
// (HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8), or every endpoint is refused.
func Seed(ctx context.Context, o Options) (map[string]int64, error) {
	o = o.withDefaults()
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	if o.Receivers == nil {
		return nil, errors.New("demo: Receivers is required (simulate.Start(demo.Receivers(rate), seed))")
	}
	partnerIDs := map[string]int64{}
	var existing []idName // GET /api/v1/partners, fetched on the first conflict
	for _, p := range demoPartners(o.Rate) {
		var created idName
		err := c.call(ctx, http.MethodPost, "/api/v1/partners", p, &created)
		switch {
		case err == nil:
			partnerIDs[p.Name] = created.ID
			continue
		case statusOf(err) != http.StatusConflict:
			return nil, fmt.Errorf("demo: create partner %q: %w", p.Name, err)
		}
		if existing == nil {
			var list struct {
				Partners []idName `json:"partners"`
			}
			if err := c.call(ctx, http.MethodGet, "/api/v1/partners", nil, &list); err != nil {
				return nil, fmt.Errorf("demo: list partners: %w", err)
			}
			existing = list.Partners
		}
		var id int64
		for _, x := range existing {
			if strings.EqualFold(x.Name, p.Name) { // partner names are unique case-insensitively
				id = x.ID
			}
		}
		if id == 0 {
			return nil, fmt.Errorf("demo: partner %q exists but is not in GET /api/v1/partners", p.Name)
		}
		partnerIDs[p.Name] = id
	}

	ids := map[string]int64{}
	for _, e := range demoEndpoints() {
		receiver := o.Receivers.URL(e.key)
		if receiver == "" {
			return nil, fmt.Errorf("demo: receiver %q is not running; start the receivers with simulate.Start(demo.Receivers(rate), seed)", e.key)
		}
		u, err := endpointURL(e, receiver)
		if err != nil {
			return nil, err
		}
		in := endpointInput{
			PartnerID: partnerIDs[e.partner], Name: e.name, Kind: e.kind, URL: u,
			EventTypes: e.eventTypes, Headers: e.headers, MaxAttempts: e.maxAttempts,
			TimeoutMs: e.timeoutMs, FailureThreshold: e.failureThreshold,
			SuccessBodyContains: e.successBodyContains,
		}
		id, err := ensureEndpoint(ctx, c, in)
		if err != nil {
			return nil, fmt.Errorf("demo: endpoint %s/%s: %w%s", e.partner, e.name, err, blockedHint(err))
		}
		ids[e.key] = id
	}
	o.Logger.Info("demo partners and endpoints ready", "partners", len(partnerIDs), "endpoints", len(ids))
	return ids, nil
}

// ensureEndpoint creates the endpoint, or finds the existing one of that
// name and points it at the current receiver URL.
func ensureEndpoint(ctx context.Context, c *client, in endpointInput) (int64, error) {
	var created idName
	err := c.call(ctx, http.MethodPost, "/api/v1/endpoints", in, &created)
	if err == nil {
		return created.ID, nil
	}
	if statusOf(err) != http.StatusConflict {
		return 0, err
	}
	var list struct {
		Endpoints []idName `json:"endpoints"`
	}
	path := "/api/v1/endpoints?partner_id=" + url.QueryEscape(strconv.FormatInt(in.PartnerID, 10))
	if err := c.call(ctx, http.MethodGet, path, nil, &list); err != nil {
		return 0, err
	}
	// Endpoint names are unique per partner, case-sensitively.
	var cur idName
	for _, e := range list.Endpoints {
		if e.Name == in.Name {
			cur = e
		}
	}
	if cur.ID == 0 {
		return 0, fmt.Errorf("exists but is not in GET %s", path)
	}
	if cur.URL != in.URL {
		patch := map[string]string{"url": in.URL}
		if err := c.call(ctx, http.MethodPatch, "/api/v1/endpoints/"+strconv.FormatInt(cur.ID, 10), patch, nil); err != nil {
			return 0, err
		}
	}
	return cur.ID, nil
}

// blockedHint explains the likeliest cause of a refused loopback URL.
func blockedHint(err error) string {
	var e *apiError
	if errors.As(err, &e) && e.Field == "url" && strings.Contains(e.Message, "blocked") {
		return " (the demo receivers are on 127.0.0.1: run hookline with HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8)"
	}
	return ""
}
