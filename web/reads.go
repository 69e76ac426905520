package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db/replica"
	"github.com/hookline/hookline/worker/monitoring"
)

// Dashboard reads on a read replica (HOOKLINE_READ_DATABASE_URL). The
// routes marked replicaReads in the route table (event log, overview and
// stats, endpoint list and pages, the audit log and its export) run their
// statements on the replica while it answers; everything else, writes and
// the sign-in, session, CSRF and portal checks that run before any route,
// stays on the primary. The handlers do not know: s.q sends a statement to
// the pool the request's context names (readRouter), the primary unless
// replicaReads put the replica there.
//
// A user's own writes are read back from the primary: a dashboard form
// post leaves a cookie with the primary's WAL position after it, and a
// read goes to the replica only once the replica has replayed that far
// (so the page a post redirects to shows what was posted). The cookie
// only ever sends its holder's reads to the primary, so it is not signed.

// readKey is the request context's key for the replica read choice.
type readKey struct{}

// readChoice is a request read from the replica, and how far behind the
// replica was measured then.
type readChoice struct {
	pool *pgxpool.Pool
	lag  time.Duration
}

// readRouter is db.DBTX over the primary pool that sends a statement to
// the replica when its context carries a readChoice. Transactions are
// begun on the primary pool itself (s.pool), never here.
type readRouter struct{ primary *pgxpool.Pool }

func (r readRouter) pool(ctx context.Context) *pgxpool.Pool {
	if rc, ok := ctx.Value(readKey{}).(*readChoice); ok {
		return rc.pool
	}
	return r.primary
}

func (r readRouter) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.pool(ctx).Exec(ctx, sql, args...)
}

func (r readRouter) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return r.pool(ctx).Query(ctx, sql, args...)
}

func (r readRouter) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return r.pool(ctx).QueryRow(ctx, sql, args...)
}

func (r readRouter) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return r.pool(ctx).CopyFrom(ctx, table, cols, src)
}

func (r readRouter) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return r.pool(ctx).SendBatch(ctx, b)
}

// wroteCookie carries the primary's WAL position after the user's last
// dashboard write.
const wroteCookie = "hookline_wrote"

// wroteFor is how long a write sends its author's reads to the primary
// at most: a replica further behind than that is shown with its lag.
const wroteFor = 10 * time.Minute

// replicaReads runs the route's statements on the read replica when it
// answers, is a standby, and has replayed the user's own last write. A
// read the replica fails as an outage, cancels for its replay, finds
// nothing to show (404), or refuses as a write (which a replica-read route
// should never make) runs again on the primary, before anything was written to the client: a
// replica's outage costs the primary the reads, never the user a 503.
func (s *Server) replicaReads(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.Reads == nil {
		return next
	}
	return func(c echo.Context) error {
		req := c.Request()
		lag, ok := s.cfg.Reads.Use(wroteLSN(req))
		if !ok {
			return next(c)
		}
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), readKey{}, &readChoice{pool: s.cfg.Reads.Pool(), lag: lag})))
		err := next(c)
		if err == nil || c.Response().Committed || req.Context().Err() != nil {
			return err
		}
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			// A record not on the replica may only not be there yet (a
			// link to an event ingested a moment ago): the primary knows.
		case concurrentChange(err):
			// A standby cancels a query whose rows its replay must remove
			// (a conflict with recovery, SQLSTATE 40001): the primary has
			// no such conflict.
			s.log.Warn("read replica cancelled a read for its replay: reading from the primary", "path", c.Path(), "err", err)
		case readOnlyRefusal(err):
			s.log.Error("a replica-read route wrote: reading it from the primary", "path", c.Path(), "err", err)
		case dbUnavailable(err):
			s.cfg.Reads.Failed()
			s.log.Warn("read replica failed a read: reading from the primary", "path", c.Path(), "err", err)
		default:
			return err
		}
		c.SetRequest(req)
		return next(c)
	}
}

// readsReplica reports whether the request's statements go to the replica.
func readsReplica(c echo.Context) bool {
	_, ok := c.Request().Context().Value(readKey{}).(*readChoice)
	return ok
}

// readOnlyRefusal reports whether err is a standby refusing a write
// (read_only_sql_transaction).
func readOnlyRefusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "25006"
}

// wroteLSN is the WAL position the request's user last wrote up to, or 0.
func wroteLSN(r *http.Request) int64 {
	ck, err := r.Cookie(wroteCookie)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(ck.Value, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// recordWrites gives every dashboard state change that succeeds a cookie
// with the primary's WAL position after it, set just before the answer is
// written (the handler's transaction has committed by then). Without a
// replica it does nothing.
func (s *Server) recordWrites(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.Reads == nil {
		return next
	}
	return func(c echo.Context) error {
		if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
			return next(c)
		}
		res := c.Response()
		res.Before(func() {
			if res.Status >= 400 {
				return
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 2*time.Second)
			defer cancel()
			lsn, err := s.cfg.Reads.PrimaryLSN(ctx)
			if err != nil {
				// Position unknown: the primary until the cookie expires.
				lsn = math.MaxInt64
			}
			http.SetCookie(res, &http.Cookie{Name: wroteCookie, Value: strconv.FormatInt(lsn, 10), Path: "/",
				MaxAge: int(wroteFor / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureRequest(c.Request())})
		})
		return next(c)
	}
}

// staleNotice is the page's notice that it was read from a replica that
// is further behind than HOOKLINE_READ_LAG_NOTICE, or "".
func (s *Server) staleNotice(c echo.Context) string {
	rc, ok := c.Request().Context().Value(readKey{}).(*readChoice)
	if !ok || s.cfg.Reads == nil || rc.lag < s.cfg.Reads.LagNotice() {
		return ""
	}
	return fmt.Sprintf("This page was read from a replica %s behind the primary: changes of the last %s may not show yet.",
		rc.lag.Round(time.Second), rc.lag.Round(time.Second))
}

// replicaCollector reports the read replica's state at scrape time.
type replicaCollector struct {
	reads   *replica.Reads
	up, lag *prometheus.Desc
}

func newReplicaCollector(r *replica.Reads) *replicaCollector {
	return &replicaCollector{reads: r, up: monitoring.ReadReplicaUp.Desc(), lag: monitoring.ReadReplicaLag.Desc()}
}

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.up; ch <- c.lag }

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.reads.State()
	up := 0.0
	if st.Up {
		up = 1
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, st.Lag.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}
