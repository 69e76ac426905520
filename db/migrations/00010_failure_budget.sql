-- +goose Up
-- The failure budget: an endpoint whose deliveries keep dying is disabled
-- once disable_after_failures consecutive deliveries have failed (died or
-- were given up; attempts do not count) AND the first of them is at least
-- disable_after_hours old, so a short outage burst never disables anyone.
-- 0 failures turns it off. Operators are warned at 50, 70 and 90 %.
ALTER TABLE endpoints
    ADD COLUMN disable_after_failures integer NOT NULL DEFAULT 10
        CHECK (disable_after_failures BETWEEN 0 AND 10000),
    ADD COLUMN disable_after_hours integer NOT NULL DEFAULT 72
        CHECK (disable_after_hours BETWEEN 0 AND 8760),
    -- Why and since when an endpoint is disabled: an operator (the API, the
    -- form), a 410 Gone from the partner, or the failure budget. A disabled
    -- endpoint still gets deliveries at fan-out; they wait, unclaimed,
    -- until it is enabled again.
    ADD COLUMN disabled_at timestamptz,
    ADD COLUMN disabled_cause text NOT NULL DEFAULT ''
        CHECK (disabled_cause IN ('', 'operator', 'gone', 'failure_budget'));
UPDATE endpoints
SET disabled_at = updated_at,
    disabled_cause = CASE WHEN disabled_reason LIKE '%410 Gone%' THEN 'gone' ELSE 'operator' END
WHERE NOT enabled;

-- The current streak of failed deliveries, kept with the breaker (written
-- by the completion batch under the same row lock). budget_warned is the
-- highest warning (percent of the budget) sent in this streak, so each
-- warning goes out once; a success resets all three.
ALTER TABLE endpoint_health
    ADD COLUMN failed_deliveries integer NOT NULL DEFAULT 0,
    ADD COLUMN first_failed_at timestamptz,
    ADD COLUMN budget_warned integer NOT NULL DEFAULT 0;

-- Operator notification channels. Each is delivered by hookline's own
-- engine: the channel owns an endpoint (of the "hookline notifications"
-- partner) with its signing secret, breaker, retries and attempt log.
-- style: webhook (a signed JSON document) or chat (an incoming webhook
-- taking {"text": "..."}). kinds lists the notification kinds it gets.
CREATE TABLE notification_channels (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    style       text        NOT NULL CHECK (style IN ('webhook', 'chat')),
    endpoint_id bigint      NOT NULL REFERENCES endpoints (id),
    kinds       text[]      NOT NULL,
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX notification_channels_name_key ON notification_channels (lower(name));

-- The notification outbox. Rows are written in the transaction that
-- records what happened (a completion batch, an operator's change) and
-- turned into deliveries to the channels by one dispatcher at a time, which
-- also applies the rate limit: per endpoint, kind and subject (a warning's
-- level, an alert's name) at most one notification per window; the rows
-- held back meanwhile are summarised by the next one sent (repeats).
-- channel_id is set only for a channel's test notification.
CREATE TABLE notifications (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text        NOT NULL,
    endpoint_id bigint      REFERENCES endpoints (id) ON DELETE CASCADE,
    subject     text        NOT NULL DEFAULT '',
    figures     jsonb       NOT NULL DEFAULT '{}',
    channel_id  bigint      REFERENCES notification_channels (id) ON DELETE CASCADE,
    state       text        NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'sent', 'suppressed', 'skipped')),
    repeats     integer     NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX notifications_pending ON notifications (id) WHERE state = 'pending';
CREATE INDEX notifications_sent ON notifications (kind, subject, endpoint_id, sent_at DESC) WHERE state = 'sent';
CREATE INDEX notifications_created ON notifications (created_at);
