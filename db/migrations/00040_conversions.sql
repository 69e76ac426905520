-- +goose Up
-- Conversions with state (worker/conversion.go, worker/architecture.md
-- "Conversions"). A postback endpoint whose rules say fire_on "change"
-- (with conversion_key and conversion_status, kept in postback_rules)
-- fires once per change of a conversion's status. Every endpoint saved
-- before has no fire_on, which means "every": it fires once per event,
-- exactly as before, and never touches these tables.
--
-- conversions: one row per endpoint and conversion, locked by the
-- transaction that decides whether an event fires. status is the last
-- status the tracker accepted (NULL: none yet); sending_* is the one send
-- in flight, a reservation that ends when its result is known or, should
-- its worker die, at sending_until; newest_event_id is the newest event
-- that fired, so an older event arriving late cannot undo it. expires_at
-- is when retention deletes the row (the endpoint's conversion_days after
-- its last change).
CREATE TABLE conversions (
    endpoint_id         bigint NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    conversion_key      text NOT NULL CHECK (length(conversion_key) <= 1024),
    partner_id          bigint NOT NULL,
    status              text,
    producer_status     text,
    status_event_id     uuid,
    status_delivery_id  bigint,
    status_at           timestamptz,
    payout              text,
    currency            text,
    newest_event_id     uuid,
    sending_delivery_id bigint,
    sending_status      text,
    sending_until       timestamptz,
    first_at            timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    PRIMARY KEY (endpoint_id, conversion_key)
);
CREATE INDEX conversions_updated ON conversions (updated_at DESC, endpoint_id DESC, conversion_key DESC);
CREATE INDEX conversions_partner ON conversions (partner_id, updated_at DESC);
CREATE INDEX conversions_expires ON conversions (expires_at);

-- conversion_history: every decision about a conversion, one row per
-- attempt: sent (the tracker accepted it), failed (it did not; the state
-- is unchanged), suppressed (the status was unchanged), superseded (a newer
-- event had already fired) or busy (another process was sending the same
-- conversion; tried again). payout is the payout as sent (after the
-- endpoint's share), a decimal string or NULL; rejection marks a status
-- that takes the conversion back. Expires with its conversion's policy.
CREATE TABLE conversion_history (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id     bigint NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    partner_id      bigint NOT NULL,
    conversion_key  text NOT NULL,
    event_id        uuid NOT NULL,
    delivery_id     bigint NOT NULL,
    attempt_no      integer NOT NULL,
    producer_status text NOT NULL,
    status          text NOT NULL,
    outcome         text NOT NULL CHECK (outcome IN ('sent', 'failed', 'suppressed', 'superseded', 'busy')),
    reason          text NOT NULL DEFAULT '',
    rejection       boolean NOT NULL DEFAULT false,
    payout          text CHECK (payout ~ '^-?[0-9]+(\.[0-9]+)?$'),
    currency        text NOT NULL DEFAULT '',
    at              timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX conversion_history_conversion ON conversion_history (endpoint_id, conversion_key, id);
CREATE INDEX conversion_history_partner_at ON conversion_history (partner_id, at);
CREATE INDEX conversion_history_at ON conversion_history (at);
CREATE INDEX conversion_history_expires ON conversion_history (expires_at);
