package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
)

// clustersByScan is the dead-letter clusters as they were read before the
// tallies (migration 00027): every dead letter since $1 with its event,
// grouped. The tallies must give the same figures.
const clustersByScan = `
WITH dead AS (
    SELECT d.endpoint_id, coalesce(d.last_error_class, '') AS error_class,
           coalesce(d.last_status_code, 0) AS status_code, d.dead_at, d.attempt_count,
           coalesce(d.last_error, '') AS last_error, ev.payload->>'payout' AS payout,
           nullif(left(btrim(ev.payload->>'currency'), 12), '') AS currency
    FROM deliveries d LEFT JOIN events ev ON ev.id = d.event_id
    WHERE d.status = 'dead' AND d.dead_at >= $1
), hourly AS (
    SELECT endpoint_id, error_class, status_code, date_trunc('hour', dead_at, 'UTC') AS hour, count(*) AS n
    FROM dead GROUP BY 1, 2, 3, 4
)
SELECT d.endpoint_id, d.error_class, d.status_code, count(*)::bigint,
       min(d.dead_at), max(d.dead_at), round(avg(d.attempt_count), 6)::float8,
       (mode() WITHIN GROUP (ORDER BY d.last_error))::text,
       round(coalesce(sum(CASE WHEN d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$' THEN d.payout::numeric END), 0), 6)::float8,
       coalesce(array_agg(DISTINCT d.currency ORDER BY d.currency) FILTER (WHERE d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$' AND d.currency IS NOT NULL), '{}')::text[],
       coalesce(bool_or(d.currency IS NULL) FILTER (WHERE d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$'), false),
       (SELECT count(*) FROM hourly h WHERE (h.endpoint_id, h.error_class, h.status_code) = (d.endpoint_id, d.error_class, d.status_code))::bigint,
       (SELECT max(h.n) FROM hourly h WHERE (h.endpoint_id, h.error_class, h.status_code) = (d.endpoint_id, d.error_class, d.status_code))::bigint
FROM dead d
GROUP BY d.endpoint_id, d.error_class, d.status_code
ORDER BY count(*) DESC, d.endpoint_id, d.error_class, d.status_code`

// clusterLines reads the clusters since since both ways, one line a
// cluster.
func clusterLines(t *testing.T, pool *pgxpool.Pool, since time.Time) (tallied, scanned []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.New(pool).DeadLetterClusters(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	round := func(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }
	for _, r := range rows {
		tallied = append(tallied, fmt.Sprintf("%d %q %d: %d dead, %s-%s, %.6f attempts, %q, payout %.6f %v unlabelled=%v, %d hours, max %d",
			r.EndpointID, r.ErrorClass, r.StatusCode, r.DeadCount, r.FirstDeadAt.UTC().Format(time.RFC3339Nano), r.LastDeadAt.UTC().Format(time.RFC3339Nano),
			round(r.AvgAttempts), r.PrimaryError, round(r.PayoutAtRisk), r.PayoutCurrencies, r.PayoutUnlabelled, r.HoursWithDead, r.MaxInOneHour))
	}
	scan, err := pool.Query(ctx, clustersByScan, since)
	if err != nil {
		t.Fatal(err)
	}
	defer scan.Close()
	for scan.Next() {
		var id, n, hours, maxHour int64
		var class, primary string
		var code int32
		var first, last time.Time
		var attempts, payout float64
		var currencies []string
		var unlabelled bool
		if err := scan.Scan(&id, &class, &code, &n, &first, &last, &attempts, &primary, &payout, &currencies, &unlabelled, &hours, &maxHour); err != nil {
			t.Fatal(err)
		}
		scanned = append(scanned, fmt.Sprintf("%d %q %d: %d dead, %s-%s, %.6f attempts, %q, payout %.6f %v unlabelled=%v, %d hours, max %d",
			id, class, code, n, first.UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano),
			attempts, primary, payout, currencies, unlabelled, hours, maxHour))
	}
	if err := scan.Err(); err != nil {
		t.Fatal(err)
	}
	return tallied, scanned
}

// TestDeadLetterTalliesFollowDeadLetters: the dead-letter clusters read
// from the tallies (migration 00027) are the clusters read from every dead
// letter: for the dead letters there were before the migration (its
// backfill), and after deliveries die, are replayed, are deleted and
// change their error while dead, both before the changes are folded into
// the tallies and after; a fold leaves no change and no empty tally
// behind, and a cluster's count is its row's.
func TestDeadLetterTalliesFollowDeadLetters(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.UpTo(ctx, pool, 26); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Two endpoints; 300 events with payouts in several shapes; each event
	// delivered to both, two thirds of the deliveries dead across 30
	// hours with three kinds of failure.
	exec(`INSERT INTO partners (name) VALUES ('p');
		INSERT INTO endpoints (partner_id, name, kind, url)
		SELECT id, 'e' || i, 'webhook', 'http://127.0.0.1:1/' || i FROM partners, generate_series(1, 2) i;
		INSERT INTO events (id, type, payload)
		SELECT gen_random_uuid(), 't', (ARRAY['{"payout": 12.5, "currency": "EUR"}', '{"payout": "3.25", "currency": " usd "}',
		       '{"payout": 7}', '{"payout": "n/a", "currency": "EUR"}', '{}', '[1, 2]', '{"payout": -2, "currency": ""}'])[1 + i % 7]::json
		FROM generate_series(1, 300) i;
		INSERT INTO deliveries (event_id, endpoint_id, max_attempts, status, attempt_count, dead_at, last_error_class, last_status_code, last_error)
		SELECT ev.id, e.id, 5, CASE WHEN n % 3 = 0 THEN 'pending' ELSE 'dead' END, 1 + n % 5,
		       CASE WHEN n % 3 <> 0 THEN now() - (n % 30) * interval '1 hour' - (n % 7) * interval '1 minute' END,
		       CASE WHEN n % 3 = 0 THEN NULL WHEN n % 4 = 0 THEN 'timeout' ELSE 'http_5xx' END,
		       CASE WHEN n % 3 = 0 OR n % 4 = 0 THEN NULL WHEN n % 5 = 0 THEN 503 ELSE 500 END,
		       CASE WHEN n % 3 = 0 THEN NULL ELSE 'error ' || (n % 4 + n % 2) END
		FROM (SELECT ev.id, e.id AS endpoint_id, row_number() OVER () AS n FROM events ev, endpoints e) ev
		JOIN endpoints e ON e.id = ev.endpoint_id`)
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	q := db.New(pool)
	now := time.Now()
	check := func(when string) {
		t.Helper()
		for _, hours := range []int{1, 24, 48} {
			since := now.Add(-time.Duration(hours) * time.Hour).Truncate(time.Hour)
			tallied, scanned := clusterLines(t, pool, since)
			if len(scanned) == 0 {
				t.Fatalf("%s, %d hours: no dead letters to compare", when, hours)
			}
			if !slices.Equal(tallied, scanned) {
				t.Errorf("%s, since %s: the clusters from the tallies\n%s\nwant (from every dead letter)\n%s",
					when, since.Format(time.RFC3339), strings.Join(tallied, "\n"), strings.Join(scanned, "\n"))
			}
		}
	}
	check("after the migration")

	// Deliveries die, a cluster is replayed, dead letters are deleted, and
	// one changes its error while dead.
	exec(`UPDATE deliveries SET status = 'dead', dead_at = now(), attempt_count = 5, last_error_class = 'http_4xx',
		last_status_code = 404, last_error = 'not found' WHERE status = 'pending' AND id % 2 = 0`)
	class, code, endpoint := "http_5xx", int32(500), int64(1)
	since := now.Add(-10 * time.Hour).Truncate(time.Hour)
	replayed, err := q.DeadLetterReplay(ctx, db.DeadLetterReplayParams{EndpointID: &endpoint, ErrorClass: &class, StatusCode: &code, Since: &since})
	if err != nil || len(replayed) == 0 {
		t.Fatalf("replay: %d replayed, %v", len(replayed), err)
	}
	exec(`DELETE FROM deliveries WHERE status = 'dead' AND last_error_class = 'timeout' AND id % 5 = 0`)
	exec(`UPDATE deliveries SET last_error_class = 'tls', last_status_code = NULL WHERE status = 'dead' AND id % 11 = 0`)
	var changes int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_tally_changes`).Scan(&changes); err != nil || changes == 0 {
		t.Fatalf("%d tally changes, %v; want the changes recorded", changes, err)
	}
	check("before folding")

	folded, err := q.DeadLetterTallyFold(ctx, 1000)
	if err != nil || folded != changes {
		t.Fatalf("folded %d, %v; want %d", folded, err, changes)
	}
	if _, err := q.DeadLetterTallyPrune(ctx); err != nil {
		t.Fatal(err)
	}
	check("after folding")
	var left, empty int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM dead_letter_tally_changes), (SELECT count(*) FROM dead_letter_tallies WHERE dead = 0)`).Scan(&left, &empty); err != nil || left != 0 || empty != 0 {
		t.Fatalf("after the fold: %d changes left, %d empty tallies, %v; want none", left, empty, err)
	}

	// The replayed cluster's count, as the page follows a replay.
	exec(`UPDATE deliveries SET status = 'dead', dead_at = now() WHERE id = ANY($1)`, []int64{replayed[0].ID, replayed[1].ID})
	n, err := q.DeadLetterClusterCount(ctx, db.DeadLetterClusterCountParams{EndpointID: endpoint, ErrorClass: class, StatusCode: code, Since: since})
	var want int64
	if err2 := pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'dead' AND endpoint_id = $1
		AND last_error_class = $2 AND last_status_code = $3 AND dead_at >= $4`, endpoint, class, code, since).Scan(&want); err != nil || err2 != nil || n != want || n == 0 {
		t.Fatalf("cluster count %d (%v, %v); want %d", n, err, err2, want)
	}
}
