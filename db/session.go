package db

import "github.com/jackc/pgx/v5/pgxpool"

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
func ConfigurePool(cfg *pgxpool.Config) {
	for k, v := range sessionParams {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
}
