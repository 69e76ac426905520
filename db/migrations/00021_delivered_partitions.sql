-- +goose Up
-- deliveries is partitioned by status: the queue (pending, failed, in
-- flight, dead) in deliveries_queue, delivered rows in deliveries_delivered,
-- which is partitioned again by ranges of event_id. An event's id is a
-- UUIDv7, ordered by its creation time, so each of those partitions holds
-- the deliveries of the events of one span of time, and retention drops a
-- whole span at once instead of deleting it row by row
-- (worker/partitions.go).
--
-- Deleting delivered rows one by one was what made a soak's latency climb:
-- at 3,000 deliveries/s, 6-minute soaks back to back read a p99 of 24-30 ms
-- in minutes 3-6 without retention and 53-74 ms with it, and a build that
-- deleted the deliveries but kept their events read 42-79 ms
-- (worker/bench/performance.md). Each delete wrote WAL and full-page
-- images for cold pages, left index entries for vacuum to clean, and
-- vacuum then read the table again.
--
-- Every statement reads and writes deliveries as before. A completion that
-- records a delivery as delivered moves its row from the queue into the
-- partition of its event's span (PostgreSQL moves a row whose update
-- changes its partition), and a resend moves it back. The queue stays the
-- size of the work waiting plus the dead letters, and the claims, which
-- name the statuses they read, read only deliveries_queue.
--
-- Keys: a partitioned table's unique indexes must contain its partition
-- key, so the parent has none. deliveries_queue keeps the primary key on
-- id and the unique (event_id, endpoint_id) (the fan-out's ON CONFLICT DO
-- NOTHING names no columns, so it is checked against the queue's indexes,
-- where new rows go); deliveries_delivered is unique on (id, event_id)
-- and (event_id, endpoint_id). Ids come from the parent's identity, as
-- before.
--
-- Delivered rows whose span has no partition (an event older than the
-- oldest span kept, delivered after long retries; or before the worker
-- first made the spans) go to deliveries_delivered_default, and retention
-- deletes them there row by row, by delivered_at.
--
-- The delivered rows already kept are copied into the default partition
-- by this migration (the queue's rows are not copied: that table becomes
-- deliveries_queue).
ALTER TABLE deliveries RENAME TO deliveries_queue;
DROP INDEX deliveries_delivered;
ALTER TABLE deliveries_queue ALTER COLUMN id DROP IDENTITY;

CREATE TABLE deliveries (
    id               bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    event_id         uuid        NOT NULL,
    endpoint_id      bigint      NOT NULL,
    -- The CHECK constraints are named as on the old table: a partition
    -- attached must have its parent's, by name.
    status           text        NOT NULL DEFAULT 'pending'
                     CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'dead')),
    attempt_count    integer     NOT NULL DEFAULT 0 CONSTRAINT deliveries_attempt_count_check CHECK (attempt_count >= 0),
    max_attempts     integer     NOT NULL CONSTRAINT deliveries_max_attempts_check CHECK (max_attempts >= 1),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz,
    lease_owner      text,
    delivered_at     timestamptz,
    dead_at          timestamptz,
    last_error       text,
    last_error_class text,
    last_status_code integer,
    last_response_ms double precision,
    replay_count     integer     NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    replayed_at      timestamptz,
    CONSTRAINT deliveries_check CHECK ((status = 'in_flight') = (lease_expires_at IS NOT NULL))
) PARTITION BY LIST (status);

CREATE TABLE deliveries_delivered PARTITION OF deliveries FOR VALUES IN ('delivered')
    PARTITION BY RANGE (event_id);
ALTER TABLE deliveries_delivered ADD CONSTRAINT deliveries_delivered_pkey PRIMARY KEY (id, event_id);
ALTER TABLE deliveries_delivered ADD CONSTRAINT deliveries_delivered_event_endpoint_key UNIQUE (event_id, endpoint_id);
-- Retention of the default partition, and the age of the oldest delivered
-- row kept (stats).
CREATE INDEX deliveries_delivered_at ON deliveries_delivered (delivered_at);
-- The event log filtered to an endpoint, as deliveries_endpoint_log on the
-- queue (migration 00009).
CREATE INDEX deliveries_delivered_endpoint_log ON deliveries_delivered (endpoint_id, created_at DESC, event_id DESC) INCLUDE (status);
-- A replay's progress, as deliveries_replayed on the queue.
CREATE INDEX deliveries_delivered_replayed ON deliveries_delivered (replayed_at, endpoint_id) WHERE replayed_at IS NOT NULL;
CREATE TABLE deliveries_delivered_default PARTITION OF deliveries_delivered DEFAULT;

INSERT INTO deliveries (id, event_id, endpoint_id, status, attempt_count, max_attempts, next_attempt_at,
                        lease_expires_at, lease_owner, delivered_at, dead_at, last_error, last_error_class,
                        last_status_code, last_response_ms, replay_count, created_at, replayed_at)
OVERRIDING SYSTEM VALUE
SELECT id, event_id, endpoint_id, status, attempt_count, max_attempts, next_attempt_at,
       lease_expires_at, lease_owner, delivered_at, dead_at, last_error, last_error_class,
       last_status_code, last_response_ms, replay_count, created_at, replayed_at
FROM deliveries_queue WHERE status = 'delivered';
DELETE FROM deliveries_queue WHERE status = 'delivered';

-- Proves the partition's bound, so attaching it does not scan it again.
ALTER TABLE deliveries_queue ADD CONSTRAINT deliveries_queue_status CHECK (status IN ('pending', 'in_flight', 'failed', 'dead'));
ALTER TABLE deliveries ATTACH PARTITION deliveries_queue FOR VALUES IN ('pending', 'in_flight', 'failed', 'dead');
ALTER TABLE deliveries_queue DROP CONSTRAINT deliveries_queue_status;

SELECT setval(pg_get_serial_sequence('deliveries', 'id'), coalesce((SELECT max(id) FROM deliveries), 0) + 1, false);

-- +goose Down
-- Delivered rows go back into the one table; their partitions go.
ALTER TABLE deliveries DETACH PARTITION deliveries_queue;
INSERT INTO deliveries_queue SELECT * FROM deliveries WHERE status = 'delivered';
-- +goose StatementBegin
DO $$
DECLARE
    last_id bigint;
BEGIN
    SELECT max(id) INTO last_id FROM deliveries_queue;
    DROP TABLE deliveries;
    ALTER TABLE deliveries_queue RENAME TO deliveries;
    ALTER TABLE deliveries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
    PERFORM setval(pg_get_serial_sequence('deliveries', 'id'), coalesce(last_id, 0) + 1, false);
END
$$;
-- +goose StatementEnd
CREATE INDEX deliveries_delivered ON deliveries (delivered_at) WHERE status = 'delivered';
