package db

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessionParams are the settings every connection hookline opens runs
// with, unless its database URL sets them itself.
//
// jit off: PostgreSQL compiles a statement to machine code when its
// estimated cost passes jit_above_cost, and a statement over partitioned
// tables is estimated at the sum of its partitions. The retention's
// events sweep, over 22 partitions of events and as many of delivered
// deliveries, was estimated at 1.09 million: each call compiled 390
// functions in 0.98 s of CPU to run 47 ms of work (EXPLAIN ANALYZE), 9.7 s
// of JIT in six calls of a 6-minute soak, a second of a core at every
// retention pass. hookline's statements are index lookups and short
// scans; none gains from compiling.
var sessionParams = map[string]string{"jit": "off"}

// ConfigurePool sets hookline's session settings (sessionParams) on a
// pool's connections, keeping any the database URL sets.
//
// They are set by a SET once each connection is made (pgconn's
// AfterConnect, which the config's copies keep: the worker's own sessions
// get them too), not sent as startup parameters: a connection pooler such
// as PgBouncer refuses a startup parameter it does not know ("FATAL:
// unsupported startup parameter: jit"). The SET is one round trip when a
// connection opens, never per statement: 0.1-0.2 ms over the unix socket,
// where opening the connection itself takes 10-20 ms, and the pool keeps a
// connection for up to an hour.
func ConfigurePool(cfg *pgxpool.Config) {
	ConfigureSession(&cfg.ConnConfig.Config)
}

// ConfigureSession is ConfigurePool for one connection's config.
func ConfigureSession(cfg *pgconn.Config) {
	set := sessionSQL(cfg.RuntimeParams)
	if set == "" {
		return
	}
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		if _, err := c.Exec(ctx, set).ReadAll(); err != nil {
			return fmt.Errorf("set hookline's session settings: %w", err)
		}
		if next != nil {
			return next(ctx, c)
		}
		return nil
	}
}

// sessionSQL is the SET statements for the sessionParams the connection's
// startup parameters (params) do not set, in one simple query.
func sessionSQL(params map[string]string) string {
	var sets []string
	for k, v := range sessionParams {
		if _, set := params[k]; !set {
			sets = append(sets, "SET "+k+" = '"+strings.ReplaceAll(v, "'", "''")+"'")
		}
	}
	sort.Strings(sets)
	return strings.Join(sets, "; ")
}
