-- The database's floor per delivery: what the three row writes of a
-- delivery (claim, completion, attempt) cost PostgreSQL alone, in plain SQL
-- with 256-row batches and a synchronous commit per batch: no network, no
-- planning of hookline's statements, no Go. Compare it with the
-- "PostgreSQL µs per delivery" that hookline bench prints.
--
-- Run it against a bench database whose queue is full (it rewrites it):
--
--   hookline bench -database-url "$URL" -deliveries 100000 -naive-concurrency 1
--   psql "$URL" -f worker/bench/floor.sql
--
-- Each CALL's time divided by the number of rows is the floor of that step
-- (2026-12-01, this project's 2-core machine: claim 8.5 µs, completion and
-- attempt 10.9 µs per delivery).

UPDATE deliveries SET status = 'pending', delivered_at = NULL, attempt_count = 0,
       lease_expires_at = NULL, lease_owner = NULL, next_attempt_at = now() - interval '1 minute';
TRUNCATE delivery_attempts;
VACUUM ANALYZE deliveries;

CREATE OR REPLACE PROCEDURE pg_temp.floor_claim(batch int) LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
    LOOP
        WITH picked AS (
            SELECT d.id FROM deliveries d
            WHERE d.status IN ('pending', 'failed') AND d.next_attempt_at <= now()
            ORDER BY d.endpoint_id, d.next_attempt_at
            LIMIT batch
            FOR UPDATE SKIP LOCKED)
        UPDATE deliveries d
        SET status = 'in_flight', lease_expires_at = now() + interval '1 minute', lease_owner = 'floor'
        FROM picked p WHERE d.id = p.id;
        GET DIAGNOSTICS n = ROW_COUNT;
        COMMIT;
        EXIT WHEN n = 0;
    END LOOP;
END $$;

CREATE OR REPLACE PROCEDURE pg_temp.floor_complete(batch int) LANGUAGE plpgsql AS $$
DECLARE ids bigint[];
BEGIN
    LOOP
        SELECT array_agg(id) INTO ids FROM (SELECT id FROM deliveries WHERE status = 'in_flight' LIMIT batch) s;
        EXIT WHEN ids IS NULL;
        INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
        SELECT d.id, d.endpoint_id, 1, now(), 1.5, 'ok', 200 FROM deliveries d WHERE d.id = ANY (ids);
        UPDATE deliveries d
        SET status = 'delivered', attempt_count = d.attempt_count + 1, lease_expires_at = NULL, lease_owner = NULL,
            delivered_at = now(), last_status_code = 200, last_response_ms = 1.5
        FROM unnest(ids) u (id) WHERE d.id = u.id AND d.lease_owner = 'floor';
        COMMIT;
    END LOOP;
END $$;

SELECT count(*) AS rows FROM deliveries;
\timing on
CALL pg_temp.floor_claim(256);
CALL pg_temp.floor_complete(256);
