-- +goose Up
-- Search keys: the values of configured top-level payload fields (click,
-- transaction and order ids by default, HOOKLINE_SEARCH_KEYS), extracted at
-- ingest so an event is found by the identifier its producer knows.
-- search_values holds the values, search_keys the field each came from at
-- the same index (the API shows key -> value); NULL when the payload has
-- none of the keys. An exact search is `search_values @> ARRAY[$1]`,
-- whichever key carried the value.
--
-- Why a GIN-indexed array on events rather than a side table (value,
-- event_id, key): measured with 300,000 events of two keys each inserted in
-- batches of 1,000 (PostgreSQL 15, two cores), the side table cost ~2.5x
-- the insert time of the GIN column (and its extra statement or CTE per
-- batch), its btree was 104 MB against the GIN's 39 MB, and it needs its own
-- retention (or an event_id index for a cascade); the column is deleted with
-- its event by the existing retention. Both answer an exact lookup in well
-- under a millisecond. GIN's fast-update pending list keeps the per-insert
-- cost low (fastupdate off measured ~40 % slower); vacuum merges it.
-- What it costs ingest: `hookline bench` (each event fanned out to 100
-- endpoints) shows no change beyond its run-to-run noise; the event INSERT
-- alone (20,000 events each with a distinct search value, with the btree
-- below) takes ~14 % longer (median of 5 runs, 1.66 s -> 1.89 s).
ALTER TABLE events ADD COLUMN search_keys text[];
ALTER TABLE events ADD COLUMN search_values text[];
CREATE INDEX events_search_values ON events USING gin (search_values) WHERE search_values IS NOT NULL;

-- The event log pages newest first by (created_at, id), keyset. A btree
-- serves those pages at any depth and every created_at range the BRIN
-- served (retention's cutoff), so it replaces the BRIN.
DROP INDEX events_created;
CREATE INDEX events_created ON events (created_at, id);

-- The event log filtered to dead deliveries walks the log newest first and
-- probes each event for a dead delivery. Through this index the probe
-- touches only dead rows (1,000,000 events, 1 % of deliveries dead: 438 ms
-- to 32 ms for a first page, cold). It costs ingest nothing: rows enter it
-- only when a delivery dies.
CREATE INDEX deliveries_dead_event ON deliveries (event_id, endpoint_id) WHERE status = 'dead';
