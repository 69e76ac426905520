-- +goose Up
-- events is partitioned by ranges of id, as deliveries_delivered is by
-- event_id (migration 00021): an event's id is a UUIDv7, so each
-- partition holds the events of one span of time, with the same bounds as
-- the span of delivered deliveries beside it. Retention no longer deletes
-- events one by one: once a span's delivered deliveries are dropped, the
-- events of that span that still have a delivery (waiting, dead, or in the
-- delivered default partition) are copied into a partition of their own
-- for the same range, and the span's partition is dropped
-- (worker/partitions_events.go).
--
-- Deleting events row by row was what was left of a soak's climb: two
-- 6-minute soaks at 3,000 deliveries/s back to back read a p99 of 57-85 ms
-- in minutes 3-6 with the events sweep off and 81-359 ms with it
-- (worker/bench/performance.md).
--
-- Idempotency keys: a partitioned table's unique indexes must contain its
-- partition key, and a key is unique across all events, so the keys move
-- to event_keys, which ingest writes in the statement that stores the
-- events (an event is stored only when its key was). events keeps the key
-- it was sent with, as before, for the log and its filters. A key is kept
-- as long as its event: retention deletes both together.
CREATE TABLE event_keys (
    idempotency_key text PRIMARY KEY,
    event_id        uuid NOT NULL
);
-- Retention finds the keys of a span's events by range.
CREATE INDEX event_keys_event ON event_keys (event_id);
INSERT INTO event_keys (idempotency_key, event_id)
SELECT idempotency_key, id FROM events WHERE idempotency_key IS NOT NULL;
DROP INDEX events_idempotency_key;

-- The events kept so far become one partition, from the lowest id to the
-- first id after the newest event (and after now), attached without
-- copying a row. Retention treats it as a span that ends there.
ALTER TABLE events RENAME TO events_before_partitions;
ALTER INDEX events_pkey RENAME TO events_before_partitions_pkey;
ALTER INDEX events_created RENAME TO events_before_partitions_created;
ALTER INDEX events_search_values RENAME TO events_before_partitions_search_values;

CREATE TABLE events (
    id              uuid        NOT NULL,
    -- The CHECK constraints are named as on the old table: a partition
    -- attached must have its parent's, by name.
    type            text        NOT NULL CONSTRAINT events_type_check CHECK (length(type) BETWEEN 1 AND 200),
    payload         json        NOT NULL,
    idempotency_key text        CONSTRAINT events_idempotency_key_check CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    partner_id      bigint      CONSTRAINT events_partner_id_fkey REFERENCES partners (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    search_keys     text[],
    search_values   text[],
    CONSTRAINT events_pkey PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE INDEX events_created ON events (created_at, id);
CREATE INDEX events_search_values ON events USING gin (search_values) WHERE search_values IS NOT NULL;
-- Events whose span has no partition yet (ingest before any worker made
-- them); a new partition takes its rows out of here.
CREATE TABLE events_default PARTITION OF events DEFAULT;

-- +goose StatementBegin
DO $$
DECLARE
    newest timestamptz;
    bound  text;
BEGIN
    -- The time in a UUIDv7's first 48 bits, in milliseconds.
    SELECT to_timestamp(('x' || lpad(replace(left(id::text, 13), '-', ''), 16, '0'))::bit(64)::bigint / 1000.0)
    INTO newest FROM events_before_partitions ORDER BY id DESC LIMIT 1;
    newest := date_trunc('second', greatest(coalesce(newest, now()), now())) + interval '1 second';
    bound := lpad(to_hex((extract(epoch FROM newest) * 1000)::bigint), 12, '0');
    bound := left(bound, 8) || '-' || right(bound, 4) || '-0000-0000-000000000000';
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_before_partitions FOR VALUES FROM (MINVALUE) TO (%L)', bound);
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The events go back into one table, their keys back into its unique index.
ALTER TABLE events DETACH PARTITION events_before_partitions;
INSERT INTO events_before_partitions SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_before_partitions RENAME TO events;
ALTER INDEX events_before_partitions_pkey RENAME TO events_pkey;
ALTER INDEX events_before_partitions_created RENAME TO events_created;
ALTER INDEX events_before_partitions_search_values RENAME TO events_search_values;
CREATE UNIQUE INDEX events_idempotency_key ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP TABLE event_keys;
