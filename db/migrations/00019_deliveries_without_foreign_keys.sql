-- +goose Up
-- deliveries keeps no foreign keys to events and endpoints. Each check
-- ran for every delivery queued: a lookup and a FOR KEY SHARE lock on the
-- parent row, written to the row and to the WAL, and on a hot endpoint a
-- MultiXact as soon as two ingests lock it at once. Ingest of 10 events to
-- 10 deliveries from four sessions ran 1,321-1,336 transactions/s with the
-- two keys and 1,556-1,775 without them (worker/bench/performance.md,
-- "Ingest without the deliveries' foreign keys").
--
-- What the keys guarded holds by construction, and each point has a test:
-- - A delivery is only ever inserted in the transaction that inserts its
--   event (DeliveryFanOut after EventInsertSet, NotificationEnqueue), for
--   endpoints it has just read; replays re-queue existing rows.
-- - Endpoints and partners are never deleted (they are disabled and
--   archived).
-- - Events are deleted only by retention, and only when no delivery is
--   left (RetentionDeleteEventsOf, RetentionSweepEvents: NOT EXISTS). No
--   delivery can appear for an event after its own transaction, so no
--   delivery can be queued for an event retention is deleting.
-- The unique (event_id, endpoint_id) index stays, and the indexes that
-- join deliveries to events and endpoints are unchanged.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_endpoint_id_fkey;

-- +goose Down
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id);
ALTER TABLE deliveries ADD CONSTRAINT deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES endpoints (id);
