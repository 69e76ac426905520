-- +goose Up
-- Claims that write nothing. Endpoints are divided into shards; each shard
-- is owned by one live worker at a time, under a session advisory lock held
-- on that worker's liveness connection, and only the owner claims its
-- endpoints' deliveries, by reading them (worker/architecture.md, "The
-- claim"). What the claim's UPDATE recorded in deliveries (in flight, whose
-- lease) a worker now keeps in memory; these columns say it to the others.
--
-- claim_protocol: 2 for workers that claim by ownership. A row without it
-- was written by a worker of an older version, which claims by leasing rows
-- and does not know about ownership: while such a worker is alive (its
-- liveness lock held), workers of this version claim nothing, so the two
-- never send the same delivery. A rolling upgrade hands over once the last
-- older worker stops.
-- in_flight, in_flight_retries: deliveries the worker holds (claimed and not
-- yet recorded), and how many of them were awaiting a retry; the pipeline
-- summary reads them, as rows in flight are no longer marked in deliveries.
-- draining: the worker is stopping; the others take its shards as it
-- releases them.
ALTER TABLE worker_heartbeats
    ADD COLUMN claim_protocol smallint,
    ADD COLUMN in_flight int NOT NULL DEFAULT 0,
    ADD COLUMN in_flight_retries int NOT NULL DEFAULT 0,
    ADD COLUMN draining boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE worker_heartbeats
    DROP COLUMN claim_protocol,
    DROP COLUMN in_flight,
    DROP COLUMN in_flight_retries,
    DROP COLUMN draining;
