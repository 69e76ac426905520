-- +goose Up
-- The partner portal: single-use sign-in links an operator or a producer's
-- backend requests for one partner, and the sessions they start. Only
-- SHA-256 hashes of the random tokens are stored, so a leaked table hands
-- out neither a link nor a session. Every row names its partner, and every
-- portal statement filters by it.
CREATE TABLE portal_links (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partner_id bigint      NOT NULL REFERENCES partners (id),
    token_hash text        NOT NULL UNIQUE,
    created_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    -- Set once, when the link starts a session; a used link never works again.
    used_at    timestamptz,
    revoked_at timestamptz
);
CREATE INDEX portal_links_partner ON portal_links (partner_id, created_at DESC);

CREATE TABLE portal_sessions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash   text        NOT NULL UNIQUE,
    partner_id   bigint      NOT NULL REFERENCES partners (id),
    link_id      bigint      REFERENCES portal_links (id),
    csrf_token   text        NOT NULL,
    user_agent   text        NOT NULL DEFAULT '',
    remote_ip    text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- A revoked session is refused on its next request; the row stays for
    -- the partner page's history until the idle or absolute limit passes.
    revoked_at   timestamptz
);
CREATE INDEX portal_sessions_partner ON portal_sessions (partner_id) WHERE revoked_at IS NULL;
