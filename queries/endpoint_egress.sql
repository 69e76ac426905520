-- An endpoint's way out (DESIGN §17): proxy, CAs, client certificate, receiver credentials.

-- name: EndpointEgressGet :one
-- The worker reads this once per endpoints.egress_rev; the API and the
-- endpoint page read it to show what is in use (never the sealed values).
SELECT * FROM endpoint_egress WHERE endpoint_id = @endpoint_id;

-- name: EndpointEgressSet :one
-- Replaces the endpoint's egress row and moves endpoints.egress_rev in the
-- same statement, so no worker keeps a client built from the old row.
-- Sealed values arrive sealed. A new certificate (another subject or
-- expiry) clears the expiry warnings sent for the old one.
WITH saved AS (
    INSERT INTO endpoint_egress (
        endpoint_id, proxy, ca_bundle, client_cert, client_key, client_cert_subject,
        client_cert_expires_at, auth_kind, auth_username, auth_secret,
        oauth_token_url, oauth_scopes, oauth_audience, updated_at
    ) VALUES (
        @endpoint_id, @proxy, @ca_bundle, @client_cert, sqlc.narg('client_key'), @client_cert_subject,
        sqlc.narg('client_cert_expires_at'), @auth_kind, @auth_username, sqlc.narg('auth_secret'),
        @oauth_token_url, @oauth_scopes, @oauth_audience, now()
    )
    ON CONFLICT (endpoint_id) DO UPDATE SET
        proxy = EXCLUDED.proxy, ca_bundle = EXCLUDED.ca_bundle,
        client_cert = EXCLUDED.client_cert, client_key = EXCLUDED.client_key,
        client_cert_subject = EXCLUDED.client_cert_subject,
        client_cert_expires_at = EXCLUDED.client_cert_expires_at,
        client_cert_warned_days = CASE
            WHEN endpoint_egress.client_cert = EXCLUDED.client_cert THEN endpoint_egress.client_cert_warned_days
        END,
        auth_kind = EXCLUDED.auth_kind, auth_username = EXCLUDED.auth_username,
        auth_secret = EXCLUDED.auth_secret, oauth_token_url = EXCLUDED.oauth_token_url,
        oauth_scopes = EXCLUDED.oauth_scopes, oauth_audience = EXCLUDED.oauth_audience,
        updated_at = now()
    RETURNING *
), bumped AS (
    UPDATE endpoints SET egress_rev = egress_rev + 1, updated_at = now()
    WHERE id = @endpoint_id
)
SELECT * FROM saved;

-- name: EndpointEgressCertsExpiring :many
-- Client certificates expiring within @days days of now whose warning for
-- that horizon (@days: 30 or 7) has not been sent; the notifier sends one
-- and records it with EndpointEgressCertWarned.
SELECT g.endpoint_id, e.name, g.client_cert_subject, g.client_cert_expires_at
FROM endpoint_egress g
JOIN endpoints e ON e.id = g.endpoint_id
WHERE g.client_cert_expires_at IS NOT NULL
  AND g.client_cert_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(days => @days::int)
  AND (g.client_cert_warned_days IS NULL OR g.client_cert_warned_days > @days::int)
ORDER BY g.client_cert_expires_at;

-- name: EndpointEgressCertWarned :exec
-- Records that the @days warning went out, so it is sent once per
-- certificate and horizon.
UPDATE endpoint_egress SET client_cert_warned_days = @days::int WHERE endpoint_id = @endpoint_id;
