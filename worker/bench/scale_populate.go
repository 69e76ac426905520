package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/signing"
)

// seedMany empties the database and creates n endpoints as seed does with
// Spread (endpoint i named ep<i>, at <url>/ep<i>, subscribed to
// eventType(i) alone, with its health row and a sealed secret), in a few
// set-based statements: seed's three statements per endpoint took minutes
// for 100,000.
func seedMany(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, url string, n, concurrency int) error {
	if _, err := pool.Exec(ctx, "TRUNCATE partners, endpoints, endpoint_secrets, endpoint_health, events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	var partner int64
	if err := pool.QueryRow(ctx, `INSERT INTO partners (name) VALUES ('bench') RETURNING id`).Scan(&partner); err != nil {
		return err
	}
	// As seed's settings (seedMaxAttempts and the rest).
	if _, err := pool.Exec(ctx, `
		INSERT INTO endpoints (partner_id, name, kind, url, method, event_types, headers, max_attempts, timeout_ms,
		                       max_in_flight, failure_threshold, enabled)
		SELECT $1, 'ep' || g, 'webhook', $2 || '/ep' || g, 'POST', ARRAY['conversion.' || g], '{}', $5, $6, $3, $7, true
		FROM generate_series(0, $4 - 1) g ORDER BY g`,
		partner, url, seedMaxInFlight(concurrency, n), n, seedMaxAttempts, seedTimeoutMs, seedFailureThreshold); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO endpoint_health (endpoint_id) SELECT id FROM endpoints`); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT id FROM endpoints ORDER BY id`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	sealed := make([][]any, len(ids))
	for i, id := range ids {
		secret, err := signing.NewSecret(rand.Reader)
		if err != nil {
			return err
		}
		c, err := box.Seal(id, []byte(secret))
		if err != nil {
			return err
		}
		sealed[i] = []any{id, c}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"endpoint_secrets"}, []string{"endpoint_id", "ciphertext"}, pgx.CopyFromRows(sealed)); err != nil {
		return err
	}
	// What EndpointSecretCreate does for each: the secret becomes the
	// endpoint's current one.
	_, err = pool.Exec(ctx, `UPDATE endpoints e SET secret_version = s.id FROM endpoint_secrets s WHERE s.endpoint_id = e.id;
		ANALYZE endpoints; ANALYZE endpoint_health; ANALYZE endpoint_secrets`)
	return err
}

// populateDelivered writes n delivered deliveries to the database's
// endpoints in turn, each with its event and its one attempt, as a running
// service leaves them, through the real tables: events and delivered
// deliveries go to the partitions of their ids' spans, attempts to those
// of their days. Their events' ids are UUIDv7 of times spread over the
// last hour (or since midnight UTC, the attempts' day, when that is
// shorter), so that they land in the partitions the worker made when it
// started. It writes with INSERT ... SELECT generate_series, a million
// events a statement, the indexes kept (the ids ascend, so every btree
// grows at its right edge), and returns how many of the rows went to a
// default partition (none unless the partitions did not exist).
func populateDelivered(ctx context.Context, pool *pgxpool.Pool, n int64, endpoints int) (inDefault int64, err error) {
	var first int64
	if err := pool.QueryRow(ctx, `SELECT min(id) FROM endpoints`).Scan(&first); err != nil {
		return 0, err
	}
	now := time.Now().UTC()
	span := min(time.Hour, now.Sub(now.Truncate(24*time.Hour))-time.Minute)
	span = max(span, time.Second)
	from := now.Add(-span - time.Minute)
	stepUs := float64(span.Microseconds()) / float64(n)
	const chunk = 1_000_000
	for lo := int64(0); lo < n; lo += chunk {
		hi := min(lo+chunk, n) - 1
		if _, err := pool.Exec(ctx, populateDeliveredSQL, lo, hi, from, stepUs, first, endpoints); err != nil {
			return 0, fmt.Errorf("rows %d-%d: %w", lo, hi, err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE events; ANALYZE deliveries; ANALYZE delivery_attempts`); err != nil {
		return 0, err
	}
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events_default) + (SELECT count(*) FROM deliveries_delivered_default)
		+ (SELECT count(*) FROM delivery_attempts_default)`).Scan(&inDefault)
	return inDefault, err
}

// populateDeliveredSQL writes rows $1..$2: row g's event is created at $3
// plus g × $4 µs, its id a UUIDv7 of that millisecond (48 bits of time,
// the version, then bits of md5(g)); it goes to endpoint $5 + g mod $6,
// was attempted once 5 ms later for 20-419 ms and answered 200.
const populateDeliveredSQL = `
WITH g AS (
    SELECT g, $3::timestamptz + make_interval(secs => g * $4::float8 / 1e6) AS at, md5(g::text) AS h
    FROM generate_series($1::bigint, $2::bigint) g
), ev AS (
    INSERT INTO events (id, type, payload, created_at, search_keys, search_values)
    SELECT (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
           'conversion.' || (g % $6::int), json_build_object('click_id', h, 'payout', (g % 1000) / 10.0, 'currency', 'USD'),
           at, ARRAY['click_id'], ARRAY[h]
    FROM g
    RETURNING id, type, created_at
), d AS (
    INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, next_attempt_at, delivered_at,
                            last_status_code, last_response_ms, created_at)
    SELECT id, $5::bigint + substr(type, 12)::bigint, 'delivered', 1, 5, created_at,
           created_at + interval '5 ms' + make_interval(secs => (20 + ('x' || substr(id::text, 35, 2))::bit(8)::int % 400) / 1e3),
           200, 20 + ('x' || substr(id::text, 35, 2))::bit(8)::int % 400, created_at
    FROM ev
    RETURNING id, endpoint_id, created_at, last_response_ms
)
INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code, response_excerpt)
SELECT id, endpoint_id, 1, created_at + interval '5 ms', last_response_ms, 'ok', 200, '{"ok":true}'
FROM d`
