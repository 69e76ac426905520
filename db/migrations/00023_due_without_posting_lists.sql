-- +goose Up
-- deliveries_due without posting lists. The deliveries queued in one
-- transaction for one endpoint share their next_attempt_at, and btree
-- deduplication keeps such equal keys in one posting list. A scan marks an
-- index entry dead (so that the next scan skips it without reading the
-- table) only when every row of its posting list is dead; the claim takes
-- a run of equal keys a few rows at a time, so until the last of them was
-- sent every claim read again each one already delivered and gone from the
-- queue. In a drain of 40,000 deliveries the claim's scan read 24 buffers
-- a loop at the start and 212 near the end. Without posting lists each
-- entry is marked dead on its own: in six pairs of drains alternating,
-- PostgreSQL's CPU a delivery was 42.5-51.8 µs against 52.2-76.2 with them
-- (worker/bench/performance.md, "The claim's reads in a drain, measured
-- again"); db/queue_index_test.go reads 104 buffers on every scan with
-- them, 106 and then 10 without. The queue holds only waiting rows, so the
-- larger index costs little. Entries already in posting lists keep them
-- until their rows leave the queue: no REINDEX is needed, and this takes
-- no lock that blocks the queue's writers.
ALTER INDEX deliveries_due SET (deduplicate_items = off);

-- +goose Down
ALTER INDEX deliveries_due RESET (deduplicate_items);
