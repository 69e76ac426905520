-- +goose Up
-- How an endpoint's requests leave (DESIGN §17): its proxy, the CAs its
-- receiver's certificate is checked against, its client certificate, and
-- the credentials sent to its receiver. A row only for endpoints that
-- change any of it; the claim reads endpoints.egress_rev alone (0: none),
-- and the worker reads this row once per revision.
CREATE TABLE endpoint_egress (
    endpoint_id bigint PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
    -- '' = the default proxy (HOOKLINE_EGRESS_PROXY, or direct without
    -- one), 'direct', or http://host:port (no credentials: it is shown).
    proxy text NOT NULL DEFAULT ''
        CONSTRAINT endpoint_egress_proxy CHECK (proxy IN ('', 'direct') OR proxy LIKE 'http://%'),
    -- CA certificates (PEM) trusted in addition to the system roots; stored
    -- plain: a CA certificate is public.
    ca_bundle text NOT NULL DEFAULT '',
    -- The client certificate (PEM, public, shown as subject and expiry)
    -- and its private key, sealed with worker/secretbox for this endpoint.
    client_cert text NOT NULL DEFAULT '',
    client_key bytea,
    client_cert_subject text NOT NULL DEFAULT '',
    client_cert_expires_at timestamptz,
    -- The last expiry warning sent for this certificate (30 or 7 days
    -- ahead); a new certificate clears it.
    client_cert_warned_days integer,
    -- Receiver credentials: basic (username + sealed password) or oauth2
    -- client credentials (client id in username, sealed client secret).
    auth_kind text NOT NULL DEFAULT 'none'
        CONSTRAINT endpoint_egress_auth_kind CHECK (auth_kind IN ('none', 'basic', 'oauth2')),
    auth_username text NOT NULL DEFAULT '',
    auth_secret bytea,
    oauth_token_url text NOT NULL DEFAULT '',
    oauth_scopes text[] NOT NULL DEFAULT '{}',
    oauth_audience text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT endpoint_egress_client_key CHECK ((client_cert = '') = (client_key IS NULL))
);

-- Moves with every change of the endpoint's egress row, so each worker
-- rebuilds that endpoint's client (and drops its cached token) once.
ALTER TABLE endpoints ADD COLUMN egress_rev bigint NOT NULL DEFAULT 0;

