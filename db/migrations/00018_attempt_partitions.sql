-- +goose Up
-- delivery_attempts is partitioned by day of started_at (UTC), so that
-- retention drops a whole day at once instead of deleting it row by row.
-- Every delivery writes an attempt row; at 3,000 deliveries/s a day is
-- about 260 million rows, and deleting them in batches of 5,000 (the old
-- retention) costs as much again as writing them, in WAL, in index
-- cleanup and in vacuum, while a DROP costs a few milliseconds.
--
-- The worker creates each day's partition ahead of time (this migration
-- the first three) and drops those wholly past the attempts' retention
-- (worker/partitions.go). Rows whose
-- day has no partition (a clock far off, a worker that has not run for
-- days) go to delivery_attempts_default; when their day's partition is
-- created they are moved into it. Retention deletes them row by row.
--
-- The existing table becomes the first partition, covering everything up
-- to the end of today (or of its latest attempt): no row is copied.
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_until_partitioned;
ALTER INDEX delivery_attempts_delivery RENAME TO delivery_attempts_until_partitioned_delivery;
ALTER INDEX delivery_attempts_endpoint RENAME TO delivery_attempts_until_partitioned_endpoint;
ALTER INDEX delivery_attempts_started RENAME TO delivery_attempts_until_partitioned_started;
-- A partition's primary key must contain the partition key; the one on
-- (id, started_at) is built for it when it is attached.
ALTER TABLE delivery_attempts_until_partitioned DROP CONSTRAINT delivery_attempts_pkey;
CREATE TABLE delivery_attempts (
    id               bigint           GENERATED ALWAYS AS IDENTITY,
    delivery_id      bigint           NOT NULL,
    endpoint_id      bigint           NOT NULL,
    attempt_no       integer          NOT NULL,
    started_at       timestamptz      NOT NULL,
    -- Named as on the old table: a partition attached must have its
    -- parent's CHECK constraints, by name.
    duration_ms      double precision NOT NULL CONSTRAINT delivery_attempts_duration_ms_check CHECK (duration_ms >= 0),
    outcome          text             NOT NULL CONSTRAINT delivery_attempts_outcome_check CHECK (outcome IN ('ok', 'transient', 'permanent', 'gone')),
    status_code      integer,
    error_class      text,
    error            text,
    response_excerpt text,
    PRIMARY KEY (id, started_at)
) PARTITION BY RANGE (started_at);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);
CREATE INDEX delivery_attempts_endpoint ON delivery_attempts (endpoint_id, started_at DESC);
CREATE INDEX delivery_attempts_started ON delivery_attempts USING brin (started_at);
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts DEFAULT;

-- +goose StatementBegin
DO $$
DECLARE
    last_id  bigint;
    upper_at timestamptz;
    day_at   timestamptz;
BEGIN
    SELECT max(id), date_trunc('day', greatest(now(), max(started_at)), 'UTC') + interval '1 day'
      INTO last_id, upper_at
      FROM delivery_attempts_until_partitioned;
    IF last_id IS NULL THEN
        DROP TABLE delivery_attempts_until_partitioned;
    ELSE
        -- Its ids came from its own identity; the partitioned table's
        -- goes on after them.
        ALTER TABLE delivery_attempts_until_partitioned ALTER COLUMN id DROP IDENTITY;
        PERFORM setval(pg_get_serial_sequence('delivery_attempts', 'id'), last_id);
        EXECUTE format('ALTER TABLE delivery_attempts ATTACH PARTITION delivery_attempts_until_partitioned FOR VALUES FROM (MINVALUE) TO (%L)', upper_at);
    END IF;
    -- Today and the next two days, as the worker keeps them: a day's
    -- partition is made before attempts are written in it.
    FOR d IN 0..2 LOOP
        day_at := date_trunc('day', now(), 'UTC') + d * interval '1 day';
        IF last_id IS NULL OR day_at >= upper_at THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF delivery_attempts FOR VALUES FROM (%L) TO (%L)',
                           'delivery_attempts_' || to_char(day_at AT TIME ZONE 'UTC', 'YYYYMMDD'), day_at, day_at + interval '1 day');
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd
