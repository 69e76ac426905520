package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Connection poolers. hookline's pool (DATABASE_URL) may go through
// PgBouncer. In session mode that changes nothing. In transaction mode a
// client has a server session for one transaction at a time, and what
// lives in a session does not survive: LISTEN, session advisory locks (the
// worker's liveness and shard ownership, the retention lock, the
// migrations' lock), SET and named prepared statements. hookline then
// needs HOOKLINE_DIRECT_DATABASE_URL, a connection that keeps its session
// (PostgreSQL itself, or a pooler in session mode), for those; the pool's
// statements, all of them in transactions of their own, go through the
// pooler with no server-side prepared statement. Without it, hookline
// refuses to start: never a silent misbehaviour.

// directSessionConns is the most connections the direct pool opens when
// HOOKLINE_DIRECT_DATABASE_URL does not set pool_max_conns: the worker's
// two sessions (liveness, LISTEN) are connections of their own made from
// its config; the pool itself serves the retention pass and the migrations.
const directSessionConns = 4

// errTransactionPooling is the refusal to run on a pool whose sessions are
// shared without a direct connection for the session features.
var errTransactionPooling = errors.New("DATABASE_URL goes through a connection pooler that shares server sessions between transactions (PgBouncer pool_mode = transaction): hookline's LISTEN, advisory locks and migrations need a session of their own. Set HOOKLINE_DIRECT_DATABASE_URL to a connection that keeps its session (PostgreSQL itself, or PgBouncer in session mode), or use pool_mode = session")

// DirectURLFromEnv reads HOOKLINE_DIRECT_DATABASE_URL, which only makes
// sense beside a DATABASE_URL.
func DirectURLFromEnv(getenv func(string) string, databaseURL string) (string, []error) {
	v := strings.TrimSpace(getenv("HOOKLINE_DIRECT_DATABASE_URL"))
	if v == "" {
		return "", nil
	}
	if databaseURL == "" {
		return v, []error{errors.New("HOOKLINE_DIRECT_DATABASE_URL: set only with DATABASE_URL (the embedded database needs none)")}
	}
	if _, err := pgxpool.ParseConfig(v); err != nil {
		return v, []error{errors.New("HOOKLINE_DIRECT_DATABASE_URL: cannot be parsed (check its syntax)")}
	}
	return v, nil
}

// SeparateSessions checks whether the pool's connections (cfg, from
// DATABASE_URL) keep their sessions. When they do, it returns nil: the
// pool serves everything. When they are pooled per transaction, it
// adapts cfg (no SET, no server-side prepared statement) and returns the
// config of the direct pool for the session features, or refuses without
// HOOKLINE_DIRECT_DATABASE_URL. parse builds a pool config from a URL the
// way the process builds its own (main's poolConfig).
func SeparateSessions(ctx context.Context, direct string, cfg *pgxpool.Config, log *slog.Logger, parse func(string) (*pgxpool.Config, error)) (*pgxpool.Config, error) {
	shared, err := SharesSessions(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if !shared {
		if direct == "" {
			return nil, nil
		}
		// Not needed, but asked for: the session features go there all
		// the same, as the operator set it up.
		return directConfig(ctx, direct, parse)
	}
	if direct == "" {
		return nil, errTransactionPooling
	}
	// The description of each statement is cached per connection and the
	// statement run unnamed (one round trip, as with prepared statements):
	// a named prepared statement would stay on a server session that the
	// next transaction may not have.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	// A SET would stay behind on a server session that other clients then
	// use, and be missing from the next: the settings go in the role's
	// defaults (see db/POSTGRESQL.md, "Running on production PostgreSQL").
	cfg.ConnConfig.AfterConnect = nil
	d, err := directConfig(ctx, direct, parse)
	if err != nil {
		return nil, err
	}
	log.Info("DATABASE_URL is pooled per transaction: LISTEN, advisory locks and migrations use HOOKLINE_DIRECT_DATABASE_URL")
	warnJIT(ctx, cfg, log)
	return d, nil
}

// directConfig is the direct pool's config, checked to keep its sessions.
func directConfig(ctx context.Context, direct string, parse func(string) (*pgxpool.Config, error)) (*pgxpool.Config, error) {
	d, err := parse(direct)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_DIRECT_DATABASE_URL: %w", err)
	}
	if c, err := pgconn.ParseConfig(direct); err == nil {
		if _, set := c.RuntimeParams["pool_max_conns"]; !set {
			d.MaxConns = directSessionConns
		}
	}
	shared, err := SharesSessions(ctx, d.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect to HOOKLINE_DIRECT_DATABASE_URL: %w", err)
	}
	if shared {
		return nil, errors.New("HOOKLINE_DIRECT_DATABASE_URL goes through a connection pooler that shares server sessions between transactions (PgBouncer pool_mode = transaction): point it at PostgreSQL itself, or at a pooler in session mode")
	}
	return d, nil
}

// warnJIT says when the pool's connections, which get no SET through a
// transaction pooler, run with JIT on (see ConfigurePool for its cost).
func warnJIT(ctx context.Context, cfg *pgxpool.Config, log *slog.Logger) {
	c := cfg.ConnConfig.Copy()
	c.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, c)
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var jit, user string
	if err := conn.QueryRow(ctx, "SELECT current_setting('jit'), current_user").Scan(&jit, &user); err == nil && jit == "on" {
		log.Warn("JIT is on for the pooled connections, and hookline's statements do not gain from it (a retention sweep over partitions compiles for a second of a core): turn it off for hookline's role", "sql", "ALTER ROLE "+pgx.Identifier{user}.Sanitize()+" SET jit = off")
	}
}
