-- +goose Up
-- The id of an endpoint's newest signing secret, kept by the statement that
-- adds a secret (EndpointSecretCreate). The worker caches decrypted secrets
-- per endpoint and reloads them when a claim returns a different version;
-- reading it here costs the claim nothing per row, where max(id) over
-- endpoint_secrets was a subquery per claimed row.
ALTER TABLE endpoints ADD COLUMN secret_version bigint NOT NULL DEFAULT 0;
UPDATE endpoints e
SET secret_version = s.v
FROM (SELECT endpoint_id, max(id) AS v FROM endpoint_secrets GROUP BY endpoint_id) s
WHERE s.endpoint_id = e.id;

