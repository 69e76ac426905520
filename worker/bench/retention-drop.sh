#!/bin/bash
# Retention of one day of attempts: the batched DELETE hookline used to run
# against the DROP of a day's partition it runs now
# (worker/bench/performance.md, "Retention as a DROP").
#
# usage: worker/bench/retention-drop.sh DATABASE_URL [ROWS_A_DAY]
#
# Builds two scratch tables shaped like delivery_attempts (one plain, one
# partitioned by day), each with two days of ROWS_A_DAY attempts, retires
# the first day from each, prints time and WAL for both, and drops the
# scratch tables. Use a database of its own, with fsync on.
set -euo pipefail
URL=${1:?usage: $0 DATABASE_URL [ROWS_A_DAY]}
N=${2:-1000000}
P() { PGOPTIONS="-c client_min_messages=warning" psql "$URL" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
elapsed() { echo "$2 - $1" | bc; }
P <<SQL
DROP TABLE IF EXISTS retention_demo_plain, retention_demo_part CASCADE;
CREATE TABLE retention_demo_plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, delivery_id bigint NOT NULL, endpoint_id bigint NOT NULL,
    attempt_no int NOT NULL, started_at timestamptz NOT NULL, duration_ms float8 NOT NULL, outcome text NOT NULL, status_code int);
CREATE INDEX ON retention_demo_plain (delivery_id);
CREATE INDEX ON retention_demo_plain (endpoint_id, started_at DESC);
CREATE INDEX ON retention_demo_plain USING brin (started_at);
CREATE TABLE retention_demo_part (id bigint GENERATED ALWAYS AS IDENTITY, delivery_id bigint NOT NULL, endpoint_id bigint NOT NULL,
    attempt_no int NOT NULL, started_at timestamptz NOT NULL, duration_ms float8 NOT NULL, outcome text NOT NULL, status_code int,
    PRIMARY KEY (id, started_at)) PARTITION BY RANGE (started_at);
CREATE INDEX ON retention_demo_part (delivery_id);
CREATE INDEX ON retention_demo_part (endpoint_id, started_at DESC);
CREATE INDEX ON retention_demo_part USING brin (started_at);
CREATE TABLE retention_demo_part_d1 PARTITION OF retention_demo_part FOR VALUES FROM ('2026-11-01') TO ('2026-11-02');
CREATE TABLE retention_demo_part_d2 PARTITION OF retention_demo_part FOR VALUES FROM ('2026-11-02') TO ('2026-11-03');
INSERT INTO retention_demo_plain (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
SELECT g, g % 100, 1, '2026-11-01'::timestamptz + (g % $N) * (interval '86400 s' / $N) + (g / $N) * interval '1 day', 12.5, 'ok', 200
FROM generate_series(0, 2 * $N - 1) g;
INSERT INTO retention_demo_part (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
SELECT delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code FROM retention_demo_plain;
VACUUM ANALYZE retention_demo_plain;
VACUUM ANALYZE retention_demo_part;
CHECKPOINT;
SQL
lsn() { P -c "SELECT pg_current_wal_lsn()"; }
wal() { P -c "SELECT pg_size_pretty(pg_wal_lsn_diff('$2', '$1'))"; }
size() { P -c "SELECT pg_size_pretty(coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size('$1'::regclass))) FROM pg_partition_tree('$1'::regclass)"; }

l0=$(lsn); t0=$(date +%s.%N); batches=0
while :; do
  n=$(P -c "WITH d AS (DELETE FROM retention_demo_plain WHERE id IN (SELECT id FROM retention_demo_plain WHERE started_at < '2026-11-02' LIMIT 5000) RETURNING 1) SELECT count(*) FROM d")
  batches=$((batches + 1))
  [ "$n" -lt 5000 ] && break
done
t1=$(date +%s.%N); l1=$(lsn)
echo "DELETE of $N attempts in $batches batches of 5,000: $(elapsed "$t0" "$t1") s, WAL $(wal "$l0" "$l1")"
P -c "VACUUM retention_demo_plain"
t2=$(date +%s.%N); l2=$(lsn)
echo "VACUUM after it: $(elapsed "$t1" "$t2") s, WAL $(wal "$l1" "$l2"); the table with its indexes is still $(size retention_demo_plain)"
P -c "DROP TABLE retention_demo_part_d1"
t3=$(date +%s.%N); l3=$(lsn)
echo "DROP of the day's partition ($N attempts): $(elapsed "$t2" "$t3") s, WAL $(wal "$l2" "$l3"); the partitioned table is now $(size retention_demo_part)"
P -c "DROP TABLE retention_demo_plain, retention_demo_part CASCADE"
