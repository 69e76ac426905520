-- +goose Up
-- How each attempt left (DESIGN §17): the egress proxy ('direct' when none),
-- the TLS version ('TLS 1.3'; null for plain HTTP) and whether its session
-- was resumed, the subject of the client certificate offered, and the kind
-- of receiver credential sent ('basic', 'oauth2'; null for none). Never a
-- key, a password or a token: these are shown in the event log, the API
-- and the partner portal. All null for attempts written before, and for
-- attempts that never reached the network (egress_proxy null tells them
-- apart from a direct one). Nullable columns without a default rewrite no
-- partition.
ALTER TABLE delivery_attempts
    ADD COLUMN egress_proxy text,
    ADD COLUMN tls_version text,
    ADD COLUMN tls_resumed boolean,
    ADD COLUMN client_cert_subject text,
    ADD COLUMN credential text;
