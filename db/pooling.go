package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SharesSessions reports whether connections made with cfg share their
// server sessions with other clients: a pooler such as PgBouncer in
// transaction mode between hookline and PostgreSQL, which gives a client a
// server session for one transaction at a time. LISTEN, session advisory
// locks (the worker's liveness and shard ownership, the retention lock, the
// migrations' lock), SET and named prepared statements do not survive it.
//
// A client cannot ask the pooler its mode (PgBouncer's SHOW pool_mode is
// for its admin console), so it is seen in what it does: client a reads
// its server process id, client b opens a transaction and reads its own,
// and a reads again. With sessions of their own, a keeps its server
// process and b has another. Pooled per transaction, a's server session
// went back to the pool when its statement ended: b is handed it (PgBouncer
// hands out the server session used last first), or a comes back to
// another one.
func SharesSessions(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	c := cfg.Copy()
	// Nothing that stays behind on a server session: no SET once
	// connected, no named prepared statement.
	c.AfterConnect = nil
	c.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a, err := pgx.ConnectConfig(ctx, c)
	if err != nil {
		return false, err
	}
	defer a.Close(context.WithoutCancel(ctx))
	b, err := pgx.ConnectConfig(ctx, c)
	if err != nil {
		return false, err
	}
	defer b.Close(context.WithoutCancel(ctx))
	pid := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (int32, error) {
		var p int32
		if err := q.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
			return 0, fmt.Errorf("read the server process id: %w", err)
		}
		return p, nil
	}
	first, err := pid(a)
	if err != nil {
		return false, err
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	other, err := pid(tx)
	if err != nil {
		return false, err
	}
	if other == first {
		return true, nil
	}
	again, err := pid(a)
	if err != nil {
		return false, err
	}
	return again != first, nil
}
