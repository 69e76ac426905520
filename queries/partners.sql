-- name: PartnerCreate :one
-- Inserts a partner; a duplicate name (case-insensitive) fails with 23505.
INSERT INTO partners (name, contact, notes)
VALUES (@name, @contact, @notes)
RETURNING *;

-- name: NotificationPartnerEnsure :one
-- The partner that owns the channels' endpoints, created on first use.
WITH found AS (
    SELECT id FROM partners WHERE lower(name) = lower(@name)
), made AS (
    INSERT INTO partners (name, notes)
    SELECT @name, 'Endpoints of the operator notification channels (Settings → Notifications).'
    WHERE NOT EXISTS (SELECT 1 FROM found)
    ON CONFLICT DO NOTHING
    RETURNING id
)
SELECT id FROM found UNION ALL SELECT id FROM made;

-- name: PartnerGet :one
SELECT * FROM partners WHERE id = @id;

-- name: PartnerGetForUpdate :one
-- The partner under its row lock, for a PATCH that reads then writes.
SELECT * FROM partners WHERE id = @id FOR UPDATE;

-- name: PartnerList :many
-- Every partner with endpoint counts, archived ones last.
SELECT p.*,
       (SELECT count(*) FROM endpoints e WHERE e.partner_id = p.id)::bigint AS endpoint_count
FROM partners p
ORDER BY p.archived_at IS NOT NULL, lower(p.name);

-- name: PartnerExisting :many
-- Which of the given partner ids exist (ingest validates partner_id).
SELECT id FROM partners WHERE id = ANY(@ids::bigint[]);

-- name: PartnerUpdate :one
-- Writes a partner's name, contact and notes; a duplicate name fails with
-- 23505, as on create.
UPDATE partners
SET name = @name, contact = @contact, notes = @notes, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: PartnerSetArchived :one
-- Archiving stops new deliveries to the partner's endpoints (fan-out skips
-- archived partners); queued deliveries and history are kept.
UPDATE partners
SET archived_at = CASE WHEN @archived::boolean THEN coalesce(archived_at, now()) END,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: PartnerSetPortalManage :one
-- Allows or refuses the partner's portal to create endpoints, disable and
-- enable them and change their event types. Portal sessions read the flag
-- on every request, so a change applies to open sessions at once.
UPDATE partners
SET portal_manage_endpoints = @allowed, updated_at = now()
WHERE id = @id
RETURNING *;
