-- name: AttemptInsert :copyfrom
-- Appends attempts with COPY, one batch per completion flush (or rescue), in
-- the transaction that records their deliveries' outcome; never updated.
INSERT INTO delivery_attempts (
    delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome,
    status_code, error_class, error, response_excerpt, response_private
) VALUES (
    @delivery_id, @endpoint_id, @attempt_no, @started_at, @duration_ms, @outcome,
    @status_code, @error_class, @error, @response_excerpt, @response_private
);

-- name: AttemptInsertRows :exec
-- AttemptInsert's rows as parallel arrays in one INSERT, so that a
-- completion flush can send them in the batch that carries its COMMIT
-- (a COPY is a round trip of its own and cannot join a batch). A status
-- code of 0 and an empty error class, error or excerpt are stored as NULL,
-- as AttemptInsert's nil. response_private: the connection went to an
-- address only an allow list opened (the portal hides such an excerpt).
-- How the attempt left (migration 00038) arrives as small numbers, so that
-- encoding it allocates nothing per row: the proxy, the certificate's
-- subject and the credential kind as 1-based places in @egress_names (the
-- batch's distinct values; 0 for none, stored as NULL), the TLS version as
-- its minor number plus one (4: 'TLS 1.3'; 0: plain HTTP, NULL), and
-- tls_resumed only with a TLS version.
INSERT INTO delivery_attempts (
    delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome,
    status_code, error_class, error, response_excerpt, response_private,
    egress_proxy, tls_version, tls_resumed, client_cert_subject, credential
)
SELECT a.delivery_id, a.endpoint_id, a.attempt_no, a.started_at, a.duration_ms, a.outcome,
       NULLIF(a.status_code, 0), NULLIF(a.error_class, ''), NULLIF(a.error, ''), NULLIF(a.response_excerpt, ''),
       a.response_private,
       n.names[NULLIF(a.proxy, 0)], CASE WHEN a.tls > 0 THEN 'TLS 1.' || (a.tls - 1) END,
       CASE WHEN a.tls > 0 THEN a.tls_resumed END, n.names[NULLIF(a.cert, 0)], n.names[NULLIF(a.credential, 0)]
FROM (SELECT unnest(@delivery_ids::bigint[]) AS delivery_id,
             unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@attempt_nos::int[]) AS attempt_no,
             unnest(@started_ats::timestamptz[]) AS started_at,
             unnest(@durations_ms::float8[]) AS duration_ms,
             unnest(@outcomes::text[]) AS outcome,
             unnest(@status_codes::int[]) AS status_code,
             unnest(@error_classes::text[]) AS error_class,
             unnest(@errors::text[]) AS error,
             unnest(@response_excerpts::text[]) AS response_excerpt,
             unnest(@response_privates::bool[]) AS response_private,
             unnest(@egress_proxies::int[]) AS proxy,
             unnest(@tls_minors::int[]) AS tls,
             unnest(@tls_resumeds::bool[]) AS tls_resumed,
             unnest(@client_certs::int[]) AS cert,
             unnest(@credentials::int[]) AS credential) a,
     (SELECT @egress_names::text[] AS names) n;

-- name: AttemptListByEvent :many
-- Attempts of every delivery of one event, oldest first. not_before is
-- the event's created_at less eventAttemptsSlack (web/events.go): no
-- attempt starts before its event exists, and the bound lets PostgreSQL
-- skip the attempt log's partitions of the days before the event instead
-- of probing every one (at a year's retention, 77 ms a call against 1 ms).
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE d.event_id = @event_id AND a.started_at >= @not_before::timestamptz
ORDER BY a.delivery_id, a.attempt_no, a.id;

-- name: AttemptPageByEndpoint :many
-- One page of an endpoint's attempts, newest first: those older than the
-- cursor (before_started_at, before_id) when one is given, failures only
-- when @failures_only, successes only when ok_only, started in [since,
-- until) and answered with status_code when given. Keyset paging over delivery_attempts_endpoint: a
-- page costs the same however far back it is, and attempts written
-- meanwhile never shift a page.
SELECT a.id, a.delivery_id, a.attempt_no, a.started_at, a.duration_ms, a.outcome, a.status_code,
       a.error_class, a.error, a.response_excerpt, d.event_id, d.status AS delivery_status,
       a.egress_proxy, a.tls_version, a.tls_resumed, a.client_cert_subject, a.credential
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE a.endpoint_id = @endpoint_id
  AND (sqlc.narg('before_started_at')::timestamptz IS NULL
       OR (a.started_at, a.id) < (sqlc.narg('before_started_at')::timestamptz, sqlc.narg('before_id')::bigint))
  AND (NOT @failures_only::bool OR a.outcome <> 'ok')
  AND (NOT coalesce(sqlc.narg('ok_only')::bool, false) OR a.outcome = 'ok')
  AND (sqlc.narg('since')::timestamptz IS NULL OR a.started_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR a.started_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('status_code')::int IS NULL OR a.status_code = sqlc.narg('status_code')::int)
ORDER BY a.started_at DESC, a.id DESC
LIMIT @row_limit::int;

-- name: RetentionDeleteAttempts :execrows
-- Retention of the attempts in the default partition, those whose day had
-- no partition when they were written: a batch of those started before the
-- cutoff. The days' partitions go whole (worker/partitions.go). Every
-- retention delete runs in small batches, each its own short transaction,
-- so delivery never waits behind one giant DELETE. The batch is deleted by
-- key from an array, never hashed against a scan of the partition (see
-- RetentionDeleteDelivered).
DELETE FROM delivery_attempts_default
WHERE id = ANY (ARRAY(
    SELECT id FROM delivery_attempts_default
    WHERE started_at < @before::timestamptz
    LIMIT @batch_size::int));

-- name: AttemptPartitionRanges :many
-- The ranges of started_at that the partitions of delivery_attempts cover
-- (worker/partitions.go), in order; the default partition is left out. A
-- partition's bounds are read from its definition, "FOR VALUES FROM
-- (MINVALUE | 'ts') TO ('ts')"; MINVALUE reads as the epoch, before any attempt.
SELECT coalesce((regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1], 'epoch')::timestamptz AS from_at,
       (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz AS to_at
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'delivery_attempts'::regclass
  AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
ORDER BY to_at;

-- name: AttemptPartitionsBefore :many
-- The partitions of delivery_attempts that end at or before the cutoff:
-- every attempt in them is past its retention. The bounds are read as
-- times only once the partitions are known to be delivery_attempts' (a
-- MATERIALIZED CTE): in one WHERE the planner may cast the bounds of
-- every partition in the database first, and deliveries_delivered's are
-- UUIDs (migration 00021).
WITH p AS MATERIALIZED (
    SELECT c.relname, pg_catalog.pg_get_expr(c.relpartbound, c.oid) AS bound
    FROM pg_catalog.pg_inherits i
    JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'delivery_attempts'::regclass
)
SELECT relname::text AS name
FROM p
WHERE bound <> 'DEFAULT'
  AND (regexp_match(bound, 'TO \(''([^'']+)''\)'))[1]::timestamptz <= @before::timestamptz
ORDER BY relname;
