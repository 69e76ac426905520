-- +goose Up
-- hookline's schema. Forward-only: later changes are new numbered files.

-- Partners are the companies we deliver to: affiliate trackers, SaaS customers.
CREATE TABLE partners (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    contact     text        NOT NULL DEFAULT '',
    notes       text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- Archived partners keep their history but receive no new deliveries.
    archived_at timestamptz
);
CREATE UNIQUE INDEX partners_name_key ON partners (lower(name));

-- An endpoint is one destination of a partner: a signed JSON webhook or a
-- postback URL template with {macros}.
CREATE TABLE endpoints (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partner_id            bigint  NOT NULL REFERENCES partners (id),
    name                  text    NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    kind                  text    NOT NULL CHECK (kind IN ('webhook', 'postback')),
    -- For postbacks this is the URL template.
    url                   text    NOT NULL CHECK (length(url) BETWEEN 1 AND 4096),
    method                text    NOT NULL DEFAULT 'POST' CHECK (method IN ('GET', 'POST')),
    -- Empty means every event type. "conversion.*" matches by prefix.
    event_types           text[]  NOT NULL DEFAULT '{}',
    -- Custom request headers, {"Name": "value"}; hookline's own headers cannot be overridden.
    headers               jsonb   NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
    max_attempts          integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 50),
    timeout_ms            integer NOT NULL DEFAULT 15000 CHECK (timeout_ms BETWEEN 100 AND 120000),
    -- NULL rate means unlimited.
    rate_per_sec          double precision CHECK (rate_per_sec > 0 AND rate_per_sec <= 100000),
    burst                 integer CHECK (burst BETWEEN 1 AND 100000),
    max_in_flight         integer NOT NULL DEFAULT 8 CHECK (max_in_flight BETWEEN 1 AND 1000),
    failure_threshold     integer NOT NULL DEFAULT 10 CHECK (failure_threshold BETWEEN 1 AND 1000),
    -- Postbacks: a 2xx counts only when the first 4 KiB of the body contain this.
    success_body_contains text    NOT NULL DEFAULT '',
    enabled               boolean NOT NULL DEFAULT true,
    disabled_reason       text    NOT NULL DEFAULT '',
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (partner_id, name)
);

-- Signing secrets, AES-256-GCM encrypted with the master key. The newest
-- unexpired secret is current; older unexpired ones still sign during a
-- rotation overlap.
CREATE TABLE endpoint_secrets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id bigint      NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    ciphertext  bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
CREATE INDEX endpoint_secrets_endpoint ON endpoint_secrets (endpoint_id, created_at DESC);

-- Events are immutable. The payload is kept as json (not jsonb) so the
-- bytes we sign and send are exactly the bytes we stored.
CREATE TABLE events (
    id              uuid        PRIMARY KEY,
    type            text        NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
    payload         json        NOT NULL,
    idempotency_key text        CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    partner_id      bigint      REFERENCES partners (id),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX events_idempotency_key ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_created ON events USING brin (created_at);

-- The queue: one row per (event, endpoint).
CREATE TABLE deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         uuid    NOT NULL REFERENCES events (id),
    endpoint_id      bigint  NOT NULL REFERENCES endpoints (id),
    status           text    NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'dead')),
    attempt_count    integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- Set while in_flight: past it, the claiming worker is presumed dead and
    -- the delivery is rescued (at-least-once).
    lease_expires_at timestamptz,
    lease_owner      text,
    delivered_at     timestamptz,
    dead_at          timestamptz,
    last_error       text,
    last_error_class text,
    last_status_code integer,
    last_response_ms double precision,
    replay_count     integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    -- The duplicate guard: an event reaches an endpoint through one row only.
    UNIQUE (event_id, endpoint_id),
    CHECK ((status = 'in_flight') = (lease_expires_at IS NOT NULL))
);
-- Claims walk each endpoint's due rows oldest first.
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at) WHERE status IN ('pending', 'failed');
-- In-flight counts per endpoint (the in-flight cap) and lease rescue.
CREATE INDEX deliveries_in_flight ON deliveries (endpoint_id, lease_expires_at) WHERE status = 'in_flight';
-- Dead letters by time (clusters, replay, the rising-dead-letters alert).
CREATE INDEX deliveries_dead ON deliveries (dead_at) WHERE status = 'dead';
-- The age of the oldest waiting delivery, the pipeline's key health figure.
CREATE INDEX deliveries_waiting_created ON deliveries (created_at) WHERE status IN ('pending', 'failed');
-- Recent throughput (stats) and retention of delivered rows.
CREATE INDEX deliveries_delivered ON deliveries (delivered_at) WHERE status = 'delivered';

-- One row per attempt, append-only, written with COPY in batches. No
-- foreign key to deliveries on purpose: the check locks the delivery row for
-- every attempt written, which cost ~15 % of delivery throughput, and the
-- worker is the only writer (it writes an attempt only for a delivery it
-- holds). Attempts are deleted by their own retention.
CREATE TABLE delivery_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id      bigint           NOT NULL,
    endpoint_id      bigint           NOT NULL,
    attempt_no       integer          NOT NULL,
    started_at       timestamptz      NOT NULL,
    duration_ms      double precision NOT NULL CHECK (duration_ms >= 0),
    outcome          text             NOT NULL CHECK (outcome IN ('ok', 'transient', 'permanent', 'gone')),
    status_code      integer,
    error_class      text,
    error            text,
    response_excerpt text
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);
CREATE INDEX delivery_attempts_endpoint ON delivery_attempts (endpoint_id, started_at DESC);
CREATE INDEX delivery_attempts_started ON delivery_attempts USING brin (started_at);

-- The circuit breaker and cached latency figures, one row per endpoint,
-- shared by every replica. Transitions are computed by worker/breaker and
-- written under the row lock.
CREATE TABLE endpoint_health (
    endpoint_id          bigint  PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
    state                text    NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures integer NOT NULL DEFAULT 0,
    opened_at            timestamptz,
    cooldown_seconds     integer NOT NULL DEFAULT 300 CHECK (cooldown_seconds > 0),
    -- An operator paused the endpoint: open, and no automatic probe.
    paused               boolean NOT NULL DEFAULT false,
    -- A Retry-After from the partner: nothing is claimed before this time.
    paused_until         timestamptz,
    -- The one delivery sent as the half-open probe.
    probe_delivery_id    bigint,
    last_success_at      timestamptz,
    last_failure_at      timestamptz,
    -- Rolling 24 h latency, refreshed from latency_histograms.
    p50_ms               double precision,
    p95_ms               double precision,
    p99_ms               double precision,
    sample_count         bigint  NOT NULL DEFAULT 0,
    -- P95 over the last 10 minutes: the early warning. A 24 h P95 moves
    -- only after hours of slow answers; this one within a minute.
    recent_p95_ms        double precision,
    recent_sample_count  bigint  NOT NULL DEFAULT 0,
    -- 24 h sparkline series (96 points of 15 min starting at spark_start).
    spark_start          timestamptz,
    spark_p50            real[],
    spark_p95            real[],
    spark_p99            real[],
    spark_count          integer[],
    stats_refreshed_at   timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- Log-bucket latency histograms per endpoint per slot. resolution_seconds is
-- 60 (minutes, kept 48 h), 900 (sparkline slots) or 3600 (hourly rollups,
-- kept 30 days). Percentiles are computed by merging buckets, never by
-- averaging percentiles.
CREATE TABLE latency_histograms (
    endpoint_id        bigint           NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    resolution_seconds integer          NOT NULL CHECK (resolution_seconds IN (60, 900, 3600)),
    bucket_start       timestamptz      NOT NULL,
    count              bigint           NOT NULL DEFAULT 0,
    ok_count           bigint           NOT NULL DEFAULT 0,
    fail_count         bigint           NOT NULL DEFAULT 0,
    sum_ms             double precision NOT NULL DEFAULT 0,
    p50_ms             double precision,
    p95_ms             double precision,
    p99_ms             double precision,
    -- worker/latency's binary encoding of the bucket counts.
    buckets            bytea            NOT NULL DEFAULT '\x',
    PRIMARY KEY (endpoint_id, resolution_seconds, bucket_start)
);
CREATE INDEX latency_histograms_slot ON latency_histograms (resolution_seconds, bucket_start);

CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text        NOT NULL CHECK (email ~ '^[^@\s]+@[^@\s]+$'),
    password_hash text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    disabled_at   timestamptz,
    last_login_at timestamptz
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- Dashboard sessions. The cookie carries only the random id; revoking a row
-- (logout, user disabled) ends the session everywhere.
CREATE TABLE user_sessions (
    id           text        PRIMARY KEY,
    user_id      bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    user_agent   text        NOT NULL DEFAULT '',
    remote_ip    text        NOT NULL DEFAULT ''
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);

-- API keys: only a SHA-256 of the key is stored (keys are 256-bit random, so
-- a fast hash is enough and keeps per-request auth cheap); the prefix
-- identifies a key in lists.
CREATE TABLE api_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    prefix       text        NOT NULL,
    key_hash     bytea       NOT NULL UNIQUE,
    created_by   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL,
    action      text        NOT NULL,
    target_type text        NOT NULL DEFAULT '',
    target_id   text        NOT NULL DEFAULT '',
    details     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at DESC);

-- Live worker replicas; a per-endpoint rate limit is split across them.
CREATE TABLE worker_heartbeats (
    worker_id    text        PRIMARY KEY,
    hostname     text        NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
