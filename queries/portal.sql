-- Reads for the partner portal's pages, kept by page; its writes are with their tables, under the same rule.
-- Partner portal. Every statement that reads or changes a partner's data
-- takes @partner_id and filters by it in SQL: the portal session's partner,
-- never a value from the request. A row of another partner is simply not
-- found (the handlers answer 404). The two lookups by token (a link being
-- consumed, a session cookie) are how the partner is learned.

-- name: PortalEndpointList :many
-- The partner's endpoints with breaker state and cached latency (the
-- columns of EndpointListWithHealth, so the dashboard's row mapping serves).
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE e.partner_id = @partner_id
ORDER BY lower(e.name), e.id;

-- name: PortalEndpointGet :one
-- One of the partner's endpoints with its health; no row for another's.
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE e.id = @id AND e.partner_id = @partner_id;

-- name: PortalEndpointCounts :many
-- Queued and dead deliveries per endpoint of the partner, each counted up
-- to @count_cap an endpoint, as EndpointQueueDepths and EndpointDeadCounts
-- count them for the dashboard: one range of deliveries_due and one of
-- deliveries_dead_cluster each, whatever the partner's backlog.
SELECT e.id AS endpoint_id,
       ((SELECT count(*) FROM (SELECT 1 FROM deliveries d
                                WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'failed')
                                LIMIT @count_cap::bigint) w)
        + (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'in_flight'))::bigint AS queued,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries d
                               WHERE d.endpoint_id = e.id AND d.status = 'dead'
                               LIMIT @count_cap::bigint) x)::bigint AS dead
FROM endpoints e
WHERE e.partner_id = @partner_id;

-- name: PortalDeadClusters :many
-- The dead letters of one of the partner's endpoints since a time, grouped
-- by error class and status code (the replay selector's key).
SELECT coalesce(d.last_error_class, '')::text AS error_class,
       coalesce(d.last_status_code, 0)::int AS status_code,
       count(*)::bigint AS dead_count,
       min(d.dead_at)::timestamptz AS first_dead_at,
       max(d.dead_at)::timestamptz AS last_dead_at,
       (mode() WITHIN GROUP (ORDER BY coalesce(d.last_error, '')))::text AS primary_error
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.status = 'dead' AND d.endpoint_id = @endpoint_id AND e.partner_id = @partner_id
  AND d.dead_at >= @since::timestamptz
GROUP BY 1, 2
ORDER BY count(*) DESC, 1, 2;

-- name: PortalDeadList :many
-- The newest dead letters of one of the partner's endpoints.
SELECT d.id, d.event_id, ev.type AS event_type, d.attempt_count, d.dead_at,
       d.last_error_class, d.last_status_code
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
JOIN events ev ON ev.id = d.event_id
WHERE d.status = 'dead' AND d.endpoint_id = @endpoint_id AND e.partner_id = @partner_id
ORDER BY d.dead_at DESC, d.id DESC
LIMIT @row_limit::int;

-- name: PortalDeliveryGet :one
-- One delivery to one of the partner's endpoints; no row for another's.
SELECT d.id, d.event_id, d.endpoint_id, d.status
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.id = @id AND e.partner_id = @partner_id;

-- name: PortalEventGet :one
-- An event that has a delivery to one of the partner's endpoints; an event
-- sent only to others is not found.
SELECT ev.*
FROM events ev
WHERE ev.id = @id
  AND EXISTS (SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
              WHERE d.event_id = ev.id AND e.partner_id = @partner_id);

-- name: PortalDeliveryListByEvent :many
-- An event's deliveries to the partner's endpoints only.
SELECT d.*, e.name AS endpoint_name, e.kind AS endpoint_kind
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = @event_id AND e.partner_id = @partner_id
ORDER BY d.id;

-- name: PortalAttemptListByEvent :many
-- The attempts of an event's deliveries to the partner's endpoints, oldest
-- first; not_before as in AttemptListByEvent.
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = @event_id AND e.partner_id = @partner_id AND a.started_at >= @not_before::timestamptz
ORDER BY a.delivery_id, a.attempt_no, a.id;

-- name: PortalDeliveryRefsByEvents :many
-- The event log's delivery chips: the partner's deliveries of these events.
SELECT d.event_id, d.id, d.endpoint_id, e.name AS endpoint_name, d.status
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = ANY(@event_ids::uuid[]) AND e.partner_id = @partner_id
ORDER BY d.event_id, d.id;
