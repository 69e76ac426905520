-- Dashboard reads on a read replica (db/replica): how far the replica has
-- replayed the primary's WAL. Positions are byte offsets into the WAL
-- (pg_lsn minus 0/0), which compare as numbers.

-- name: ReplicaPrimaryLSN :one
-- On the primary: where its WAL is written up to now. Reads no table,
-- takes no lock; a commit acknowledged before this statement is at or
-- below it.
SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint AS lsn;

-- name: ReplicaReplayState :one
-- On the replica: whether it is a standby at all (in recovery), and the
-- WAL position it has replayed up to, which is what its queries see (0 on
-- a server that is not a standby). Reads no table, takes no lock.
SELECT pg_is_in_recovery() AS in_recovery,
       coalesce((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, 0)::bigint AS replay_lsn;
