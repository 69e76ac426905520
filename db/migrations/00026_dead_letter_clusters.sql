-- +goose NO TRANSACTION
-- +goose Up
-- Dead letters by cluster (endpoint × error class × status code) in time
-- order: a cluster's first and last dead letter and its newest ones (the
-- dead-letter page's primary error), a cluster's list when expanded and a
-- cluster replay are ranges of it, however many dead letters other
-- clusters hold. Its leading endpoint_id also serves the per-endpoint
-- counts deliveries_dead_endpoint (migration 00025) served, so that one
-- goes. Rows enter it only when a delivery dies.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_dead_cluster
    ON deliveries_queue (endpoint_id, (coalesce(last_error_class, '')), (coalesce(last_status_code, 0)), dead_at)
    WHERE status = 'dead';
DROP INDEX CONCURRENTLY IF EXISTS deliveries_dead_endpoint;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_dead_endpoint
    ON deliveries_queue (endpoint_id) WHERE status = 'dead';
DROP INDEX CONCURRENTLY IF EXISTS deliveries_dead_cluster;
