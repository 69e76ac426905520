-- +goose NO TRANSACTION
-- +goose Up
-- The event log filtered to an endpoint or a partner walks the endpoint's
-- deliveries newest first. A delivery's created_at is its event's (fan-out
-- inserts it in the event's transaction, and now() is the transaction's
-- time), so (created_at, event_id) here is the log's own keyset order and
-- an endpoint's page is one index range, however rare the endpoint is in
-- the log. status is carried so a status filter is checked in the index.
-- Measured with `hookline bench -eventlog` (see README, event log figures):
-- without it a first page filtered to an endpoint that gets 1 event in
-- 10,000 walked the whole log.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_endpoint_log
    ON deliveries (endpoint_id, created_at DESC, event_id DESC) INCLUDE (status);

-- The log filtered to dead deliveries, newest first. Dead letters are kept
-- for good, so they are spread over the whole log; rows enter this index
-- only when a delivery dies.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_dead_log
    ON deliveries (created_at DESC, event_id DESC) WHERE status = 'dead';
