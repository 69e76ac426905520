-- +goose Up
-- Who last set an endpoint's URL: 'operator' (API, dashboard) or 'partner'
-- (its portal). A URL a partner set is dialled with the partner guard
-- (HOOKLINE_PARTNER_ALLOW_NETWORKS, public addresses only by default), also
-- by the worker: a name that resolved to a public address when it was saved
-- may resolve to a private one later. Existing URLs were all set through
-- checks against the operator's allow list, so they stay the operator's.
ALTER TABLE endpoints ADD COLUMN url_set_by text NOT NULL DEFAULT 'operator'
    CONSTRAINT endpoints_url_set_by CHECK (url_set_by IN ('operator', 'partner'));
