-- +goose Up
-- A worker holds a session-level advisory lock on lock_key for as long as it
-- runs, on a connection of its own. PostgreSQL releases the lock the moment
-- that session ends (the process died, or its connection did), so any
-- replica can tell a dead worker from a slow one with pg_try_advisory_lock
-- and rescue its leases within a second instead of waiting for them to
-- expire. Rows without a key (written by older versions) are left to lease
-- expiry.
ALTER TABLE worker_heartbeats ADD COLUMN lock_key bigint;
