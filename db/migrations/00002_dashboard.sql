-- +goose Up
-- When a dead letter was last replayed: the dashboard follows a replay's
-- progress (re-queued, then delivered) by this timestamp.
ALTER TABLE deliveries ADD COLUMN replayed_at timestamptz;
CREATE INDEX deliveries_replayed ON deliveries (replayed_at, endpoint_id) WHERE replayed_at IS NOT NULL;

-- Dead letters per endpoint (the endpoints table) as an index-only scan.
DROP INDEX deliveries_dead;
CREATE INDEX deliveries_dead ON deliveries (dead_at) INCLUDE (endpoint_id) WHERE status = 'dead';

-- Successful attempts in the 24 h window, beside sample_count: the success rate.
ALTER TABLE endpoint_health ADD COLUMN ok_count bigint NOT NULL DEFAULT 0;
