-- +goose Up
-- The dead-letter clusters, counted as dead letters come and go, so that
-- the dead-letter page (24 hours by default, up to 90 days) and the API's
-- clusters read a row a cluster an hour rather than every dead letter and
-- its event's payload: through an outage at a hundred times today's
-- traffic a day holds millions of dead letters, which the grouping read
-- took seconds per 300,000 over (worker/bench/performance.md).
--
-- dead_letter_tallies holds, for each cluster, UTC hour of dying and
-- payout currency, how many dead letters there are now, their attempts,
-- how many of them carry a numeric top-level "payout" and its sum.
-- currency is the event's top-level "currency" (trimmed, at most 12
-- characters) when its payout is numeric, '' otherwise: the page's
-- payout_currencies are the non-empty ones with payouts, and its
-- payout_unlabelled is whether '' has any.
CREATE TABLE dead_letter_tallies (
    endpoint_id bigint      NOT NULL,
    error_class text        NOT NULL,
    status_code int         NOT NULL,
    hour        timestamptz NOT NULL,
    currency    text        NOT NULL,
    dead        bigint      NOT NULL,
    attempts    bigint      NOT NULL,
    payouts     bigint      NOT NULL,
    payout      numeric     NOT NULL,
    PRIMARY KEY (endpoint_id, error_class, status_code, hour, currency)
);
CREATE INDEX dead_letter_tallies_hour ON dead_letter_tallies (hour);
-- Tallies whose dead letters have all gone, for DeadLetterTallyPrune.
CREATE INDEX dead_letter_tallies_gone ON dead_letter_tallies (hour) WHERE dead = 0;

-- Changes not yet folded into dead_letter_tallies, one row a dead letter
-- that came (+1) or went (-1), written by the triggers below in the
-- transaction that changed the delivery. Only inserted, so the writers of
-- dead letters (the workers' completions, replays) never wait on one
-- another for a tally row or deadlock over two; a worker folds them in
-- every few seconds (DeadLetterTallyFold), and readers add what is left.
-- The tallies' columns, without their key (many changes share one).
CREATE TABLE dead_letter_tally_changes (LIKE dead_letter_tallies);

-- The payout of an event as the clusters count it: its currency key, 1 and
-- the amount when its top-level "payout" is a number or a numeric string
-- (at most 15 digits before the point, so no sum overflows), else '', 0, 0
-- (also when the event is gone). PL/pgSQL, as the trigger below, so their
-- statements' plans are kept: as an SQL function called from the trigger
-- it was planned again for every dead letter (95 µs a dead letter that
-- came or went against 39 µs, measured replaying 66,666).
-- +goose StatementBegin
CREATE FUNCTION hookline_dead_letter_payout(event uuid, OUT currency text, OUT payouts int, OUT payout numeric)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    amount text;
    label  text;
BEGIN
    SELECT ev.payload->>'payout', nullif(left(btrim(ev.payload->>'currency'), 12), '') INTO amount, label
    FROM events ev WHERE ev.id = event;
    IF amount ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$' THEN
        currency := coalesce(label, '');
        payouts := 1;
        payout := amount::numeric;
    ELSE
        currency := '';
        payouts := 0;
        payout := 0;
    END IF;
END
$$;
-- +goose StatementEnd

-- A dead letter that came (+1) or went (-1), as a tally change. An UPDATE
-- of a dead letter that keeps it dead is both, so a change of its error or
-- time moves it between tallies.
-- +goose StatementBegin
CREATE FUNCTION hookline_dead_letter_tally() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p record;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.status = 'dead' THEN
        p := hookline_dead_letter_payout(OLD.event_id);
        INSERT INTO dead_letter_tally_changes (endpoint_id, error_class, status_code, hour, currency, dead, attempts, payouts, payout)
        VALUES (OLD.endpoint_id, coalesce(OLD.last_error_class, ''), coalesce(OLD.last_status_code, 0),
                date_trunc('hour', coalesce(OLD.dead_at, '-infinity'), 'UTC'), p.currency, -1, -OLD.attempt_count, -p.payouts, -p.payout);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'dead' THEN
        p := hookline_dead_letter_payout(NEW.event_id);
        INSERT INTO dead_letter_tally_changes (endpoint_id, error_class, status_code, hour, currency, dead, attempts, payouts, payout)
        VALUES (NEW.endpoint_id, coalesce(NEW.last_error_class, ''), coalesce(NEW.last_status_code, 0),
                date_trunc('hour', coalesce(NEW.dead_at, '-infinity'), 'UTC'), p.currency, 1, NEW.attempt_count, p.payouts, p.payout);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Dead letters live in deliveries_queue only. The conditions are tested as
-- each row is written, so a delivery that never dies queues nothing (a
-- delivered one moving to its partition is a delete here, of a row that was
-- not dead).
CREATE TRIGGER dead_letter_tally_update AFTER UPDATE ON deliveries_queue
    FOR EACH ROW WHEN (OLD.status = 'dead' OR NEW.status = 'dead') EXECUTE FUNCTION hookline_dead_letter_tally();
CREATE TRIGGER dead_letter_tally_insert AFTER INSERT ON deliveries_queue
    FOR EACH ROW WHEN (NEW.status = 'dead') EXECUTE FUNCTION hookline_dead_letter_tally();
CREATE TRIGGER dead_letter_tally_delete AFTER DELETE ON deliveries_queue
    FOR EACH ROW WHEN (OLD.status = 'dead') EXECUTE FUNCTION hookline_dead_letter_tally();

-- The dead letters so far. CREATE TRIGGER above locks deliveries_queue
-- against writes until this commits, so none is counted twice or missed.
INSERT INTO dead_letter_tallies (endpoint_id, error_class, status_code, hour, currency, dead, attempts, payouts, payout)
SELECT d.endpoint_id, coalesce(d.last_error_class, ''), coalesce(d.last_status_code, 0),
       date_trunc('hour', coalesce(d.dead_at, '-infinity'), 'UTC'), p.currency,
       count(*), sum(d.attempt_count), sum(p.payouts), sum(p.payout)
FROM deliveries_queue d, hookline_dead_letter_payout(d.event_id) p
WHERE d.status = 'dead'
GROUP BY 1, 2, 3, 4, 5;

-- +goose Down
DROP TRIGGER dead_letter_tally_update ON deliveries_queue;
DROP TRIGGER dead_letter_tally_insert ON deliveries_queue;
DROP TRIGGER dead_letter_tally_delete ON deliveries_queue;
DROP FUNCTION hookline_dead_letter_tally();
DROP FUNCTION hookline_dead_letter_payout(uuid);
DROP TABLE dead_letter_tally_changes;
DROP TABLE dead_letter_tallies;
