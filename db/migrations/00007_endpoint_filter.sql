-- +goose Up
-- An endpoint's payload filter (the worker/filter language), validated at
-- save; NULL means every event of the endpoint's types is delivered. It is
-- evaluated at fan-out, in the ingest transaction: an event that does not
-- pass gets no delivery for the endpoint.
ALTER TABLE endpoints ADD COLUMN filter jsonb
    CHECK (filter IS NULL OR jsonb_typeof(filter) = 'object');
