-- +goose Up
-- Whether an attempt's connection went to an address that is not public
-- (one an allow list opened: HOOKLINE_ALLOW_NETWORKS or
-- HOOKLINE_PARTNER_ALLOW_NETWORKS). The partner portal never shows the
-- response excerpt of such an attempt: what a private address answers is
-- the operator's network talking. Null for attempts written before, and
-- for attempts that reached no address (a lease that expired). Adding a
-- nullable column rewrites no partition.
ALTER TABLE delivery_attempts ADD COLUMN response_private boolean;
