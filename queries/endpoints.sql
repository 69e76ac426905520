-- name: EndpointCreate :one
-- Creates the endpoint; the caller creates its health row and first secret
-- in the same transaction. A null macro_style is braces; a null url_set_by
-- is 'operator' (a partner's portal passes 'partner').
INSERT INTO endpoints (
    partner_id, name, kind, url, method, event_types, headers, max_attempts,
    timeout_ms, rate_per_sec, burst, max_in_flight, failure_threshold,
    success_body_contains, enabled, filter,
    macro_style, signature_param, preset, url_set_by, postback_rules,
    body_template, body_format, body_signature
) VALUES (
    @partner_id, @name, @kind, @url, @method, @event_types, @headers, @max_attempts,
    @timeout_ms, sqlc.narg('rate_per_sec'), sqlc.narg('burst'), @max_in_flight, @failure_threshold,
    @success_body_contains, @enabled, sqlc.narg('filter'),
    coalesce(sqlc.narg('macro_style')::text, 'braces'), @signature_param, @preset,
    coalesce(sqlc.narg('url_set_by')::text, 'operator'),
    sqlc.narg('postback_rules'),
    @body_template, @body_format, @body_signature
)
RETURNING *;

-- name: NotificationEndpointCreate :one
-- The endpoint a channel is delivered through: a webhook taking every
-- hookline/* event, never auto-disabled (a channel must not go quiet by
-- itself), retried like any webhook.
INSERT INTO endpoints (partner_id, name, kind, url, method, event_types, max_attempts, disable_after_failures)
VALUES (@partner_id, @name, 'webhook', @url, 'POST', ARRAY['hookline/*'], 8, 0)
RETURNING id;

-- name: EndpointSetHeaders :one
-- Stores custom headers whose values are sealed for this endpoint (the seal
-- names the endpoint, so a new endpoint gets its headers right after the
-- INSERT, in the same transaction).
UPDATE endpoints SET headers = @headers WHERE id = @id
RETURNING *;

-- name: EndpointGet :one
SELECT * FROM endpoints WHERE id = @id;

-- name: EndpointGetForUpdate :one
-- Locks the row for a read-modify-write (PATCH).
SELECT * FROM endpoints WHERE id = @id FOR UPDATE;

-- name: EndpointUpdate :one
-- Writes every configurable field; PATCH merges in Go and validates the whole.
-- A null macro_style, signature_param, preset or url_set_by keeps the
-- stored value (url_set_by changes only with the URL: who set it); a null
-- postback_rules means none (the caller passes the stored rules on).
UPDATE endpoints SET
    name = @name, url = @url, method = @method, event_types = @event_types,
    headers = @headers, max_attempts = @max_attempts, timeout_ms = @timeout_ms,
    rate_per_sec = sqlc.narg('rate_per_sec'), burst = sqlc.narg('burst'),
    max_in_flight = @max_in_flight, failure_threshold = @failure_threshold,
    success_body_contains = @success_body_contains,
    filter = sqlc.narg('filter'),
    macro_style = coalesce(sqlc.narg('macro_style')::text, macro_style),
    signature_param = coalesce(sqlc.narg('signature_param')::text, signature_param),
    preset = coalesce(sqlc.narg('preset')::text, preset),
    url_set_by = coalesce(sqlc.narg('url_set_by')::text, url_set_by),
    postback_rules = sqlc.narg('postback_rules'),
    body_template = @body_template, body_format = @body_format, body_signature = @body_signature,
    enabled = @enabled, disabled_reason = @disabled_reason, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: EndpointDisable :execrows
-- Disables an endpoint with a reason and its cause (a 410 Gone from the
-- partner, or its failure budget spent). Its deliveries stop being claimed
-- and new ones keep being queued for it; nothing is deleted or dead.
UPDATE endpoints
SET enabled = false, disabled_reason = @reason, disabled_cause = @cause,
    disabled_at = coalesce(sqlc.narg('now')::timestamptz, now()), updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE id = @id AND enabled;

-- name: EndpointSetFailureBudget :one
-- Writes an endpoint's failure budget (create and edit, after the main
-- write), and when the enabled flag just changed, since when and why it is
-- disabled (@cause '' when enabled).
UPDATE endpoints
SET disable_after_failures = @disable_after_failures,
    disable_after_hours = @disable_after_hours,
    disabled_at = CASE WHEN enabled THEN NULL ELSE coalesce(disabled_at, now()) END,
    disabled_cause = CASE WHEN enabled THEN '' WHEN disabled_cause = '' THEN @cause ELSE disabled_cause END
WHERE id = @id
RETURNING *;

-- name: EndpointListWithHealth :many
-- Endpoint configuration joined with breaker state and cached latency, for
-- the API and the dashboard's endpoint table.
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id'))
ORDER BY e.id;

-- name: EndpointGetWithHealth :one
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE e.id = @id;

-- name: EndpointFilters :many
-- The payload filters of endpoints that can receive deliveries (disabled
-- ones too: their deliveries wait for them), read by
-- fan-out in the ingest transaction (so a filter saved before an event's
-- transaction applies to it). Compiled filters are cached by their text.
SELECT e.id, e.filter
FROM endpoints e
JOIN partners p ON p.id = e.partner_id
WHERE e.filter IS NOT NULL AND p.archived_at IS NULL
ORDER BY e.id;

-- name: EventFilteredEndpoints :many
-- The endpoints that would take this event today, by type and partner as
-- fan-out chooses them, that have a payload filter and no delivery of it:
-- the event page evaluates their filters on the payload to show which ones
-- filtered it out. Reads only.
SELECT e.id, e.name, e.filter, p.name AS partner_name
FROM endpoints e
JOIN partners p ON p.id = e.partner_id
WHERE e.filter IS NOT NULL
  AND p.archived_at IS NULL
  AND (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id')::bigint)
  AND hookline_subscribes(e.event_types, @event_type::text)
  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = @event_id::uuid AND d.endpoint_id = e.id)
ORDER BY p.name, e.name;

-- name: EndpointOptions :many
-- Every endpoint with its partner's name, for the filters' selects.
SELECT e.id, e.name, p.name AS partner_name
FROM endpoints e
JOIN partners p ON p.id = e.partner_id
ORDER BY p.name, e.name;

-- name: EndpointRateLimits :many
-- Rate-limited endpoints, for this replica's token buckets.
SELECT id, rate_per_sec::float8 AS rate_per_sec, burst
FROM endpoints
WHERE rate_per_sec IS NOT NULL AND enabled;
