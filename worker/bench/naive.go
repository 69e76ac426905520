package bench

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// naive drains the queue the way the article's worker does, one row at a
// time: begin, claim one due row FOR UPDATE SKIP LOCKED, send it while the
// transaction stays open, record the attempt and the new state, commit. It
// uses the same sender and receiver as hookline's worker, so the difference
// is the queue discipline alone. (Holding the transaction across the HTTP
// call is the article's design and the reason it needs a connection per
// send; hookline never does it.)
//
// The statements are written here rather than in queries/ on purpose: this
// is the baseline being measured, not part of hookline.
func naive(ctx context.Context, pool *pgxpool.Pool, guard *ssrf.Guard, rcv *receiver, o Options) (Phase, error) {
	// net/http's client, as when the targets were set (nethttp.go).
	s := newNetHTTPSender(guard, o.NaiveConcurrency)
	defer s.Close()
	// The index the naive claim needs (the article's queue index: due rows
	// across all endpoints by time). Without it the baseline would measure a
	// sort of the whole queue per row rather than its transaction
	// discipline. hookline's own claim walks (endpoint_id, next_attempt_at).
	if _, err := pool.Exec(ctx, `CREATE INDEX IF NOT EXISTS bench_naive_due ON deliveries (next_attempt_at) WHERE status IN ('pending', 'failed');
		ANALYZE deliveries`); err != nil {
		return Phase{}, err
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP INDEX IF EXISTS bench_naive_due")
	// The naive worker is two orders of magnitude slower: it runs for a
	// fixed time and its rate is what it managed in that time.
	budget, cancel := context.WithTimeout(ctx, o.NaiveDuration)
	defer cancel()
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, o.NaiveConcurrency)
	start := time.Now()
	for range o.NaiveConcurrency {
		wg.Go(func() {
			for budget.Err() == nil {
				more, err := naiveOne(budget, pool, s)
				if budget.Err() != nil {
					return
				}
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == "40001" {
					// Its claim met a row another sender had just
					// recorded as delivered, which moved it into
					// deliveries_delivered (migration 00021): claim again.
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if !more {
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		return Phase{}, err
	}
	if done.Load() == 0 {
		return Phase{}, errors.New("the naive worker delivered nothing")
	}
	return Phase{Count: int(done.Load()), Duration: d}, ctx.Err()
}

func naiveOne(ctx context.Context, pool *pgxpool.Pool, s *netHTTPSender) (bool, error) {
	more := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var id, endpointID int64
		var attempts int32
		var url string
		var payload []byte
		err := tx.QueryRow(ctx, `
			SELECT d.id, d.endpoint_id, d.attempt_count, e.url, ev.payload::text::bytea
			FROM deliveries d
			JOIN endpoints e ON e.id = d.endpoint_id
			JOIN events ev ON ev.id = d.event_id
			WHERE d.status IN ('pending', 'failed') AND d.next_attempt_at <= now()
			ORDER BY d.next_attempt_at
			LIMIT 1
			FOR UPDATE OF d SKIP LOCKED`).Scan(&id, &endpointID, &attempts, &url, &payload)
		if db.NoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		more = true
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		res := s.Send(ctx, sender.Request{Method: "POST", URL: url, Header: h, Body: payload, Timeout: 15 * time.Second})
		if _, err := tx.Exec(ctx, `
			INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome, status_code)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, endpointID, attempts+1, res.Started, float64(res.Duration)/1e6, string(res.Outcome), res.StatusCode); err != nil {
			return err
		}
		status := "delivered"
		if res.Outcome != sender.OK {
			status = "failed"
		}
		_, err = tx.Exec(ctx, `
			UPDATE deliveries SET status = $2, attempt_count = attempt_count + 1, delivered_at = now(),
			       last_status_code = $3, last_response_ms = $4
			WHERE id = $1`, id, status, res.StatusCode, float64(res.Duration)/1e6)
		return err
	})
	return more, err
}
