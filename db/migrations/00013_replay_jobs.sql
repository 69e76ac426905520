-- +goose Up
-- Bulk replays by filter. A job is the filter an operator confirmed (after
-- seeing its count) and how far the worker has got: any replica takes the
-- oldest running job (FOR UPDATE SKIP LOCKED) and re-queues its next batch
-- of matching deliveries in id order after last_id, so each delivery is
-- re-queued at most once per job, a crash resumes where the last batch
-- committed, and the queue never waits behind one huge UPDATE. Every
-- delivery a job re-queues gets replayed_at = stamp, which is how its
-- progress (delivered, waiting, dead again) is counted.
CREATE TABLE replay_jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The filter. status is the deliveries' status before the replay:
    -- dead letters, or delivered ones sent again.
    status      text        NOT NULL CHECK (status IN ('dead', 'delivered')),
    endpoint_id bigint      REFERENCES endpoints (id) ON DELETE CASCADE,
    event_type  text        CHECK (length(event_type) BETWEEN 1 AND 201),
    q           text        CHECK (length(q) BETWEEN 1 AND 255),
    since       timestamptz,
    until       timestamptz,
    -- Progress.
    state       text        NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'canceled')),
    total       bigint      NOT NULL CHECK (total >= 0),
    replayed    bigint      NOT NULL DEFAULT 0,
    last_id     bigint      NOT NULL DEFAULT 0,
    stamp       timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX replay_jobs_running ON replay_jobs (id) WHERE state = 'running';
