-- +goose NO TRANSACTION
-- +goose Up
-- Which endpoints an event goes to, found by index instead of by testing
-- every endpoint against every event. Fan-out tested each endpoint's
-- event_types against each event of a request, so its cost grew with
-- events × endpoints: at 1,000 endpoints, each subscribed to its own type,
-- a steady 1,000 events/s spent most of the database's time there
-- (worker/bench/performance.md). Now an exact subscription is one GIN
-- lookup per event, and only endpoints that take every type or a
-- "prefix.*" pattern (hookline_wildcard, a partial index) are tested one by
-- one.

-- The subscription rule, in one place: an endpoint takes every type when
-- its list is empty, the types it lists, and those starting with the
-- prefix of a "prefix.*" entry.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookline_subscribes(event_types text[], event_type text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT cardinality(event_types) = 0
        OR event_type = ANY (event_types)
        OR EXISTS (SELECT 1 FROM unnest(event_types) AS t(pattern)
                   WHERE t.pattern LIKE '%*' AND starts_with(event_type, left(t.pattern, -1)))
$$;
-- +goose StatementEnd

-- Endpoints an exact type lookup cannot find: every type, or a pattern.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookline_wildcard(event_types text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT cardinality(event_types) = 0
        OR EXISTS (SELECT 1 FROM unnest(event_types) AS t(pattern) WHERE t.pattern LIKE '%*')
$$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS endpoints_event_types ON endpoints USING gin (event_types);
CREATE INDEX CONCURRENTLY IF NOT EXISTS endpoints_wildcard ON endpoints (id) WHERE hookline_wildcard(event_types);
