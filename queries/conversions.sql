-- Conversions with state (migration 00040; worker/conversion.go and
-- worker/architecture.md, "Conversions").

-- name: ConversionLock :one
-- Takes the row lock on one conversion's state, making the row when the
-- conversion is new, and returns the row as it stands. The worker runs it
-- first in the short transaction that decides whether an event fires, and
-- holds the lock until that transaction commits (before any HTTP): two
-- deliveries of one conversion, in one process or several, decide one
-- after the other. ON CONFLICT DO UPDATE locks the existing row and sees
-- its latest committed version, whatever the snapshot.
INSERT INTO conversions AS c (endpoint_id, conversion_key, partner_id, first_at, updated_at, expires_at)
SELECT e.id, @conversion_key, e.partner_id,
       coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()),
       coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(days => @keep_days::int)
FROM endpoints e
WHERE e.id = @endpoint_id
ON CONFLICT (endpoint_id, conversion_key) DO UPDATE SET expires_at = c.expires_at
RETURNING c.partner_id, c.status, c.status_event_id, c.newest_event_id,
          c.sending_delivery_id, c.sending_status, c.sending_until;

-- name: ConversionReserve :exec
-- Records, under ConversionLock's lock, that a delivery is about to send a
-- status: the reservation other deliveries of the conversion wait behind
-- until ConversionSettle ends it (or until it lapses, should the worker
-- die mid-send), and the newest event that fired.
UPDATE conversions
SET sending_delivery_id = @delivery_id::bigint, sending_status = @status::text, sending_until = @sending_until::timestamptz,
    newest_event_id = CASE WHEN newest_event_id IS NULL OR newest_event_id < @event_id::uuid THEN @event_id::uuid ELSE newest_event_id END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    expires_at = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(days => @keep_days::int)
WHERE endpoint_id = @endpoint_id AND conversion_key = @conversion_key;

-- name: ConversionSettle :execrows
-- Ends a delivery's reservation once its send's result is known. Accepted
-- by the tracker: the reserved status becomes the conversion's, with the
-- event, delivery and payout that carried it. Not accepted: the status
-- stays what the tracker last accepted, so the delivery's retry (or a
-- newer event) fires it again. Matches nothing when the reservation has
-- lapsed and another delivery has taken it.
UPDATE conversions
SET status             = CASE WHEN @accepted::boolean THEN sending_status ELSE status END,
    producer_status    = CASE WHEN @accepted::boolean THEN @producer_status::text ELSE producer_status END,
    status_event_id    = CASE WHEN @accepted::boolean THEN @event_id::uuid ELSE status_event_id END,
    status_delivery_id = CASE WHEN @accepted::boolean THEN sending_delivery_id ELSE status_delivery_id END,
    status_at          = CASE WHEN @accepted::boolean THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE status_at END,
    payout             = CASE WHEN @accepted::boolean THEN sqlc.narg('payout')::text ELSE payout END,
    currency           = CASE WHEN @accepted::boolean THEN @currency::text ELSE currency END,
    sending_delivery_id = NULL, sending_status = NULL, sending_until = NULL,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    expires_at = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(days => @keep_days::int)
WHERE endpoint_id = @endpoint_id AND conversion_key = @conversion_key AND sending_delivery_id = @delivery_id::bigint;

-- name: ConversionHistoryInsert :exec
-- Appends one decision to a conversion's history (the conversions view and
-- its per-day counts read it). Expires with the conversion's policy.
INSERT INTO conversion_history (endpoint_id, partner_id, conversion_key, event_id, delivery_id, attempt_no,
    producer_status, status, outcome, reason, rejection, payout, currency, at, expires_at)
VALUES (@endpoint_id, @partner_id, @conversion_key, @event_id, @delivery_id, @attempt_no,
    @producer_status, @status, @outcome, @reason, @rejection, sqlc.narg('payout')::text, @currency,
    coalesce(sqlc.narg('now')::timestamptz, now()),
    coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(days => @keep_days::int));

-- name: ConversionList :many
-- One page of conversions, newest change first, keyset-paged on
-- (updated_at, endpoint_id, conversion_key); filters are optional (NULL),
-- and the portal always passes its own partner. status matches the
-- tracker's word or the producer's. Reads only.
SELECT c.endpoint_id, e.name AS endpoint_name, c.partner_id, p.name AS partner_name, c.conversion_key,
       c.status, c.producer_status, c.status_event_id, c.status_at, c.payout, c.currency,
       c.sending_status, c.first_at, c.updated_at
FROM conversions c
JOIN endpoints e ON e.id = c.endpoint_id
JOIN partners p ON p.id = c.partner_id
WHERE (sqlc.narg('partner_id')::bigint IS NULL OR c.partner_id = sqlc.narg('partner_id'))
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR c.endpoint_id = sqlc.narg('endpoint_id'))
  AND (sqlc.narg('status')::text IS NULL OR c.status = sqlc.narg('status') OR c.producer_status = sqlc.narg('status'))
  AND (sqlc.narg('since')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('since'))
  AND (sqlc.narg('until')::timestamptz IS NULL OR c.updated_at < sqlc.narg('until'))
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (c.updated_at, c.endpoint_id, c.conversion_key) < (sqlc.narg('after_at'), @after_endpoint_id::bigint, @after_key::text))
ORDER BY c.updated_at DESC, c.endpoint_id DESC, c.conversion_key DESC
LIMIT @max_rows;

-- name: ConversionDays :many
-- Decisions per partner and UTC day: postbacks the trackers accepted
-- (fired), suppressed (unchanged or superseded), rejections among the fired,
-- and sends the trackers did not accept. Same filters as ConversionList,
-- on the decision's time and status. Reads only.
SELECT h.partner_id, p.name AS partner_name, (h.at AT TIME ZONE 'UTC')::date AS day,
       count(*) FILTER (WHERE h.outcome = 'sent') AS fired,
       count(*) FILTER (WHERE h.outcome IN ('suppressed', 'superseded')) AS suppressed,
       count(*) FILTER (WHERE h.outcome = 'sent' AND h.rejection) AS rejected,
       count(*) FILTER (WHERE h.outcome = 'failed') AS failed
FROM conversion_history h
JOIN partners p ON p.id = h.partner_id
WHERE (sqlc.narg('partner_id')::bigint IS NULL OR h.partner_id = sqlc.narg('partner_id'))
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR h.endpoint_id = sqlc.narg('endpoint_id'))
  AND (sqlc.narg('status')::text IS NULL OR h.status = sqlc.narg('status') OR h.producer_status = sqlc.narg('status'))
  AND h.at >= @since AND h.at < @until
GROUP BY h.partner_id, p.name, day
ORDER BY day DESC, p.name, h.partner_id;

-- name: ConversionPayouts :many
-- Payout sent per partner, UTC day and currency: the payout (after the
-- endpoint's share) of every postback a tracker accepted that was not a
-- rejection. Same filters as ConversionDays. Reads only.
SELECT h.partner_id, (h.at AT TIME ZONE 'UTC')::date AS day, h.currency,
       sum(h.payout::numeric)::text AS amount
FROM conversion_history h
WHERE h.outcome = 'sent' AND NOT h.rejection AND h.payout IS NOT NULL
  AND (sqlc.narg('partner_id')::bigint IS NULL OR h.partner_id = sqlc.narg('partner_id'))
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR h.endpoint_id = sqlc.narg('endpoint_id'))
  AND (sqlc.narg('status')::text IS NULL OR h.status = sqlc.narg('status') OR h.producer_status = sqlc.narg('status'))
  AND h.at >= @since AND h.at < @until
GROUP BY h.partner_id, day, h.currency
ORDER BY day DESC, h.partner_id, h.currency;

-- name: ConversionHistory :many
-- One conversion's decisions, oldest first: every status it went through,
-- with the event, delivery and attempt of each. partner_id, when set,
-- must own it (the portal). Reads only.
SELECT h.id, h.event_id, h.delivery_id, h.attempt_no, h.producer_status, h.status, h.outcome, h.reason,
       h.rejection, h.payout, h.currency, h.at
FROM conversion_history h
WHERE h.endpoint_id = @endpoint_id AND h.conversion_key = @conversion_key
  AND (sqlc.narg('partner_id')::bigint IS NULL OR h.partner_id = sqlc.narg('partner_id'))
ORDER BY h.id
LIMIT 1000;

-- name: RetentionDeleteConversions :execrows
-- Retention: deletes a batch of conversions past their expiry (the
-- endpoint's conversion_days after their last change). A conversion that
-- comes back after that fires as a new one. One skipped while a send holds
-- it is deleted by a later pass.
DELETE FROM conversions c
WHERE (c.endpoint_id, c.conversion_key) IN (
    SELECT o.endpoint_id, o.conversion_key FROM conversions o
    WHERE o.expires_at < @before AND o.sending_delivery_id IS NULL
    ORDER BY o.expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED);

-- name: RetentionDeleteConversionHistory :execrows
-- Retention: deletes a batch of history rows past their expiry.
DELETE FROM conversion_history h
WHERE h.id IN (SELECT o.id FROM conversion_history o WHERE o.expires_at < @before ORDER BY o.expires_at LIMIT @batch_size);

-- name: ConversionEndpoints :many
-- The postback endpoints that fire on a status change (postback_rules
-- fire_on "change"), for the conversions view's filter; partner_id, when
-- set, keeps one partner's. Reads only.
SELECT e.id, e.name, e.partner_id
FROM endpoints e
WHERE e.kind = 'postback' AND e.postback_rules ->> 'fire_on' = 'change'
  AND (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id'))
ORDER BY e.name, e.id;
