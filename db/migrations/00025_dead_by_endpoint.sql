-- +goose NO TRANSACTION
-- +goose Up
-- Each endpoint's dead letters, for the endpoints table, a partner's page
-- and the partner portal, which count them an endpoint at a time and only
-- so far (EndpointDeadCounts, PortalEndpointCounts). Dead letters are kept for good, so counting them
-- all grouped by endpoint, as those pages did on every load, grows
-- without end: 74-91 ms with 900,000 of them on ten endpoints, 2-9 ms
-- an endpoint at a time (73-85 against 43-66 ms with 1,000 on each of 900
-- endpoints, where every row is read either way). Rows enter it only when
-- a delivery dies.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_dead_endpoint
    ON deliveries_queue (endpoint_id) WHERE status = 'dead';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS deliveries_dead_endpoint;
