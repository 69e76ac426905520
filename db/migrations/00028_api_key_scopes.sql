-- +goose Up
-- API keys carry a scope (DESIGN §16): ingest posts events and reads the
-- events it posted, read takes every GET of the API, admin everything.
-- One text value, not a text[] of grants: the scopes are not independent
-- permissions to combine, admin already holds the other two, and a service
-- that both posts and reads takes two keys, each revocable alone. A CHECK
-- keeps the column to the three names; web/account owns their meaning.
--
-- The keys made before scopes existed could do everything: they become
-- admin, so no producer breaks on upgrade. The DEFAULT is a constant, so
-- adding the column rewrites no row; it is also the scope of a key created
-- without one.
--
-- partner_id optionally binds a key to one partner: its events are posted
-- with that partner and it reads only that partner's events. An admin key
-- is never bound: admin routes act across partners.
ALTER TABLE api_keys
    ADD COLUMN scope text NOT NULL DEFAULT 'admin'
        CONSTRAINT api_keys_scope_check CHECK (scope IN ('ingest', 'read', 'admin')),
    ADD COLUMN partner_id bigint CONSTRAINT api_keys_partner_id_fkey REFERENCES partners (id),
    ADD CONSTRAINT api_keys_admin_unbound CHECK (scope <> 'admin' OR partner_id IS NULL);

-- The key that posted an event, so an ingest key reads back its own events
-- and no one else's. Nullable without a default: on the partitioned events
-- (migration 00022) that is a catalog change for the parent and each
-- partition, no rewrite, and the partitions the worker makes later
-- (LIKE events) have it too. No foreign key: it would be checked on every
-- ingest and validated over every partition, and keys are revoked, never
-- deleted, so the id never dangles. Events posted before this migration,
-- and hookline's own notification events, have none: no ingest key reads
-- them.
ALTER TABLE events ADD COLUMN api_key_id bigint;

-- +goose Down
ALTER TABLE events DROP COLUMN api_key_id;
ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_admin_unbound,
    DROP COLUMN partner_id,
    DROP COLUMN scope;
