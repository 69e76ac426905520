-- +goose Up
-- The 24 h sparkline series move out of endpoint_health into a table of
-- their own. The health row is rewritten by every completion batch that
-- moves a breaker or a failure budget, and the series (four arrays of 96
-- slots, about 2 KB) made each such write copy them; the endpoint list
-- (API and dashboard) decoded them for every endpoint, shown or not.
CREATE TABLE endpoint_sparklines (
    endpoint_id bigint      PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
    -- latency.SparkSlots slots of latency.SparkStep starting here.
    start       timestamptz NOT NULL,
    p50         real[]      NOT NULL,
    p95         real[]      NOT NULL,
    p99         real[]      NOT NULL,
    counts      integer[]   NOT NULL
);

INSERT INTO endpoint_sparklines (endpoint_id, start, p50, p95, p99, counts)
SELECT endpoint_id, spark_start, spark_p50, spark_p95, spark_p99, spark_count
FROM endpoint_health
WHERE spark_start IS NOT NULL AND spark_p50 IS NOT NULL AND spark_p95 IS NOT NULL
  AND spark_p99 IS NOT NULL AND spark_count IS NOT NULL;

ALTER TABLE endpoint_health
    DROP COLUMN spark_start,
    DROP COLUMN spark_p50,
    DROP COLUMN spark_p95,
    DROP COLUMN spark_p99,
    DROP COLUMN spark_count;
