-- +goose NO TRANSACTION
-- +goose Up
-- The deliveries awaiting a retry, newest first, as deliveries_dead_log
-- keeps the dead ones (migration 00009). Without it every reader of them
-- went through deliveries_waiting_created, which holds the pending ones
-- too, and checked each row's status in the table: with a backlog of a
-- million pending deliveries, counting those awaiting retry (the pipeline
-- summary: the metrics, the overview, the alert watch) read all million,
-- and so did the event log filtered to them. Rows enter it only when an
-- attempt fails and is to be retried: a delivery sent at its first attempt
-- never writes to it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_retry_log
    ON deliveries_queue (created_at DESC, event_id DESC) WHERE status = 'failed';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS deliveries_retry_log;
