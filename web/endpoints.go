package web

// Endpoints: the operations the API, the dashboard and the portal share
// (load, create, edit), each in one transaction and audited.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/signing"
	"github.com/jackc/pgx/v5"
)

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
		if db.NoRows(err) {
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
			URLSetBy:      emptyNil(cfg.URLSetBy),
			PostbackRules: cfg.Rules,
			BodyTemplate:  cfg.Body.Template, BodyFormat: cfg.Body.Format, BodySignature: cfg.Body.Signature,
		})
		if db.IsUniqueViolation(err) {
			return conflict("name", "this partner already has an endpoint with this name")
		}
		if err != nil {
			return err
		}
		if e, err = s.saveFailureBudget(ctx, q, nil, e, cfg); err != nil {
			return err
		}
		if e, err = saveTraceparent(ctx, q, e, cfg); err != nil {
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
			map[string]any{"name": e.Name, "kind": e.Kind, "partner_id": e.PartnerID, "send_traceparent": e.SendTraceparent})
	})
	if err != nil {
		return db.Endpoint{}, "", err
	}
	return e, secret, nil
}

// editEndpoint changes an endpoint under its row lock (PATCH and the edit
// form): build turns the stored endpoint into the new input, with any
// problems found reading it; the whole result is validated before anything
// is written. by is who edits (urlSetByOperator or urlSetByPartner): a URL
// a partner changes is judged by the partner guard, and a changed URL is
// recorded as set by the editor. It returns the updated endpoint, or the
// problems (immutable fields first, then one per field) with nothing
// written; a conflict with another endpoint is an *apiError.
func (s *Server) editEndpoint(ctx context.Context, id int64, actor, by string, build func(cur db.Endpoint) (endpointInput, []fieldError, error)) (db.Endpoint, []fieldError, error) {
	var e db.Endpoint
	var problems []fieldError
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		cur, err := q.EndpointGetForUpdate(ctx, id)
		if err != nil {
			return missing(err, "endpoint")
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
		cfg, errs := validateEndpoint(in, s.urlGuard(cur, in.URL, by))
		cfg.URLSetBy = by
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
// cfg.URLSetBy is who edits: it is recorded when the URL changes.
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
		URLSetBy:      urlSetBy(cur, cfg.URL, cfg.URLSetBy),
		PostbackRules: cfg.Rules,
		BodyTemplate:  cfg.Body.Template, BodyFormat: cfg.Body.Format, BodySignature: cfg.Body.Signature,
	})
	if db.IsUniqueViolation(err) {
		return db.Endpoint{}, conflict("name", "this partner already has an endpoint with this name")
	}
	if err != nil {
		return db.Endpoint{}, err
	}
	if e, err = s.saveFailureBudget(ctx, q, &cur, e, cfg); err != nil {
		return db.Endpoint{}, err
	}
	if e, err = saveTraceparent(ctx, q, e, cfg); err != nil {
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
	add("rate_per_sec", !samePtr(a.RatePerSec, b.RatePerSec))
	add("burst", !samePtr(a.Burst, b.Burst))
	add("max_in_flight", a.MaxInFlight != b.MaxInFlight)
	add("failure_threshold", a.FailureThreshold != b.FailureThreshold)
	add("success_body_contains", a.SuccessBodyContains != b.SuccessBodyContains)
	add("enabled", a.Enabled != b.Enabled)
	add("filter", !bytes.Equal(a.Filter, b.Filter))
	add("macro_style", a.MacroStyle != b.MacroStyle)
	add("signature_param", a.SignatureParam != b.SignatureParam)
	add("preset", a.Preset != b.Preset)
	add("postback_rules", !bytes.Equal(a.PostbackRules, b.PostbackRules))
	add("body_template", a.BodyTemplate != b.BodyTemplate)
	add("body_format", a.BodyFormat != b.BodyFormat)
	add("body_signature", a.BodySignature != b.BodySignature)
	add("disable_after_failures", a.DisableAfterFailures != b.DisableAfterFailures)
	add("disable_after_hours", a.DisableAfterHours != b.DisableAfterHours)
	add("send_traceparent", a.SendTraceparent != b.SendTraceparent)
	if out == nil {
		out = []string{}
	}
	return out
}

// endpointWithHealth loads an endpoint with its health, or a 404.
func (s *Server) endpointWithHealth(ctx context.Context, id int64) (db.EndpointGetWithHealthRow, error) {
	r, err := s.q.EndpointGetWithHealth(ctx, id)
	if err != nil {
		return r, missing(err, "endpoint")
	}
	return r, nil
}
