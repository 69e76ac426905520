-- name: EndpointReachCandidates :many
-- Open breakers no operator paused, of the enabled webhook and postback
-- endpoints in @shards (as in DeliveryClaim; NULL: all), with what the
-- reachability check (worker/reachability.go) decides on: the breaker, where
-- the endpoint sends (its URL, whether a partner set it, its egress
-- settings' revision, its timeout), and how its latest attempt failed. The
-- latest attempt is one read of delivery_attempts_endpoint per breaker,
-- bounded to the hour before the breaker's last failure so that only the
-- recent partitions are read. Reads only: a check records nothing.
SELECT h.endpoint_id, h.state, h.opened_at, h.cooldown_seconds, h.consecutive_failures, h.paused,
       e.url, e.url_set_by = 'partner' AS partner_url, e.egress_rev, e.timeout_ms,
       a.error_class AS last_error_class, a.error AS last_error
FROM endpoint_health h
JOIN endpoints e ON e.id = h.endpoint_id
LEFT JOIN LATERAL (
    SELECT da.error_class, da.error
    FROM delivery_attempts da
    WHERE da.endpoint_id = h.endpoint_id
      AND da.started_at >= coalesce(h.last_failure_at, h.opened_at) - interval '1 hour'
    ORDER BY da.started_at DESC
    LIMIT 1
) a ON true
WHERE h.state = 'open' AND NOT h.paused AND h.opened_at IS NOT NULL
  AND e.enabled AND e.kind IN ('webhook', 'postback')
  AND (sqlc.narg('shards')::bool[] IS NULL
       OR (sqlc.narg('shards')::bool[])[e.id % cardinality(sqlc.narg('shards')::bool[]) + 1]);
