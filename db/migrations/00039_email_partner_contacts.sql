-- +goose Up
-- Email notification channels. A channel of style email owns an endpoint of
-- kind email whose URL is mailto:<recipients>: hookline's own engine claims,
-- retries, breaks and logs its deliveries like any other, and the worker
-- sends them over SMTP (HOOKLINE_SMTP_URL) instead of HTTP.
ALTER TABLE endpoints DROP CONSTRAINT endpoints_kind_check,
    ADD CONSTRAINT endpoints_kind_check CHECK (kind IN ('webhook', 'postback', 'email'));
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_style_check,
    ADD CONSTRAINT notification_channels_style_check CHECK (style IN ('webhook', 'chat', 'email'));

-- A partner's own notification contacts are channels with partner_id set:
-- they hear only about that partner's endpoints, and only while the
-- operator has allowed it (partner_contacts.enabled). NULL: an operator's
-- channel.
ALTER TABLE notification_channels
    ADD COLUMN partner_id bigint REFERENCES partners (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX notification_channels_partner_style ON notification_channels (partner_id, style)
    WHERE partner_id IS NOT NULL;

-- The operator's opt-in per partner: whether the partner's contacts are
-- told about its endpoints and may be edited in its portal. No row: off.
CREATE TABLE partner_contacts (
    partner_id bigint      PRIMARY KEY REFERENCES partners (id) ON DELETE CASCADE,
    enabled    boolean     NOT NULL DEFAULT false,
    updated_by text        NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The breaker watch reads an endpoint's latest breaker notification
-- (opened, closed, held open) to tell how long its breaker has been open.
CREATE INDEX notifications_breaker ON notifications (endpoint_id, id DESC)
    WHERE kind IN ('breaker.opened', 'breaker.closed', 'breaker.held_open');
