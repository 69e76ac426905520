-- +goose Up
-- Whether a partner may, in its portal, create endpoints, disable and
-- enable them, and change the event types they subscribe to. Off by
-- default: these stay with the operator unless the operator allows them
-- per partner (dashboard partner page, or the partner API).
ALTER TABLE partners ADD COLUMN portal_manage_endpoints boolean NOT NULL DEFAULT false;
