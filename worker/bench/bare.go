package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

// bareBatch is the bare worker's largest claim and completion batch. It is
// large so that the bound is generous: on this project's machine the bare
// worker reached 0.46-0.49 × raw with 256-row batches, 0.52-0.54 with
// 1,024 and 0.54-0.57 with 2,048.
const bareBatch = 2048

// bare drains the queue with the least work a worker on a PostgreSQL queue
// can do while keeping hookline's guarantees about what is stored: per
// delivery one claim (a lease, committed before the request), one
// completion and one attempt row, in batches, with the same sender, signing
// and receiver as hookline's worker. It has none of hookline's features: no
// in-flight caps, breaker, rate limits, fairness between endpoints,
// retries, health, histograms or metrics, and it takes the endpoints' URLs
// from memory.
//
// It answers the question the two other baselines cannot: how much of the
// gap between hookline and the raw ceiling is the database's share of a
// durable delivery at all, and how much is hookline's own. On a machine
// where PostgreSQL, the sender and the receiver share the cores, its ratio
// to raw bounds what any worker that records each attempt can reach there.
//
// Its statements are written here rather than in queries/ on purpose, like
// the naive worker's: this is a baseline being measured, not part of
// hookline.
func bare(ctx context.Context, pool *pgxpool.Pool, guard *ssrf.Guard, rcv *receiver, o Options, endpoints map[int64]string) (Phase, error) {
	// net/http's client, as when the targets were set (nethttp.go).
	s := newNetHTTPSender(guard, o.Concurrency)
	defer s.Close()

	type job struct {
		id, endpoint int64
		eventID      string
		attempt      int32
		payload      []byte
	}
	type result struct {
		job
		res sender.Result
	}
	// Claimed deliveries wait in jobs for a sender; slots bounds claimed
	// but not yet completed deliveries, as hookline's local queue does.
	jobs := make(chan job, bareBatch)
	results := make(chan result, o.Concurrency)
	slots := make(chan struct{}, o.Concurrency+bareBatch)
	keys := [][]byte{make([]byte, 32)}

	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	var delivered int
	// Claimer: one statement per batch on its own connection, committed
	// asynchronously like hookline's claim.
	g.Go(func() error {
		defer close(jobs)
		conn, err := pool.Acquire(gctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		if _, err := conn.Exec(gctx, "SET synchronous_commit = off"); err != nil {
			return err
		}
		defer conn.Exec(context.WithoutCancel(gctx), "RESET synchronous_commit")
		claimed := 0
		for claimed < o.Deliveries {
			// Wait for room for at least a quarter batch, then take all
			// there is.
			n := 0
			for n < bareBatch/4 && claimed+n < o.Deliveries {
				select {
				case slots <- struct{}{}:
					n++
				case <-gctx.Done():
					return gctx.Err()
				}
			}
		more:
			for n < bareBatch {
				select {
				case slots <- struct{}{}:
					n++
				default:
					break more
				}
			}
			rows, err := conn.Query(gctx, `
				WITH picked AS (
				    SELECT id FROM deliveries
				    WHERE status IN ('pending', 'failed') AND next_attempt_at <= now()
				    ORDER BY endpoint_id, next_attempt_at
				    LIMIT $1
				    FOR UPDATE SKIP LOCKED)
				UPDATE deliveries d
				SET status = 'in_flight', lease_expires_at = now() + interval '30 seconds', lease_owner = 'bench-bare'
				FROM events ev
				WHERE d.id = ANY (ARRAY(SELECT id FROM picked)) AND ev.id = d.event_id
				RETURNING d.id, d.endpoint_id, d.event_id::text, d.attempt_count, ev.payload::text::bytea`, n)
			if err != nil {
				return err
			}
			// The rows go to the senders only once the claim has committed
			// (rows.Err waits for it): a completion racing an uncommitted
			// claim would see the row unclaimed and miss it.
			var claimedRows []job
			for rows.Next() {
				var j job
				if err := rows.Scan(&j.id, &j.endpoint, &j.eventID, &j.attempt, &j.payload); err != nil {
					rows.Close()
					return err
				}
				claimedRows = append(claimedRows, j)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			for _, j := range claimedRows {
				jobs <- j
			}
			got := len(claimedRows)
			for range n - got {
				<-slots
			}
			claimed += got
			if got == 0 {
				time.Sleep(time.Millisecond) // the rest is still in flight
			}
		}
		return nil
	})
	// Senders.
	var senders sync.WaitGroup
	for range o.Concurrency {
		senders.Go(func() {
			for j := range jobs {
				h := http.Header{}
				h.Set("Content-Type", "application/json")
				signing.Headers(h, keys, j.eventID, time.Now(), j.payload)
				res := s.Send(gctx, sender.Request{Method: "POST", URL: endpoints[j.endpoint], Header: h, Body: j.payload, Timeout: 15 * time.Second})
				select {
				case results <- result{j, res}:
				case <-gctx.Done():
				}
			}
		})
	}
	go func() {
		senders.Wait()
		close(results)
	}()
	// Completer: batches of up to bareBatch results or 5 ms, two
	// transactions at a time like hookline's flushers, each one COPY of
	// attempts and one UPDATE over arrays, committed synchronously.
	batches := make(chan []result, 2)
	g.Go(func() error {
		defer close(batches)
		var batch []result
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case r, ok := <-results:
				if !ok {
					if len(batch) > 0 {
						batches <- batch
					}
					return nil
				}
				if r.res.Outcome != sender.OK {
					return fmt.Errorf("bare worker: delivery %d: %s %s", r.id, r.res.Outcome, r.res.Error)
				}
				batch = append(batch, r)
				if len(batch) < bareBatch {
					continue
				}
			case <-tick.C:
				if len(batch) == 0 {
					continue
				}
			case <-gctx.Done():
				return gctx.Err()
			}
			batches <- batch
			batch = nil
		}
	})
	var mu sync.Mutex
	for range 2 {
		g.Go(func() error {
			for b := range batches {
				ids := make([]int64, len(b))
				codes := make([]int32, len(b))
				ms := make([]float64, len(b))
				attempts := make([][]any, len(b))
				for i, r := range b {
					ids[i], codes[i], ms[i] = r.id, int32(r.res.StatusCode), float64(r.res.Duration)/1e6
					attempts[i] = []any{r.id, r.endpoint, r.attempt + 1, r.res.Started, ms[i], string(r.res.Outcome), codes[i]}
				}
				var done int64
				err := pgx.BeginFunc(gctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.CopyFrom(gctx, pgx.Identifier{"delivery_attempts"},
						[]string{"delivery_id", "endpoint_id", "attempt_no", "started_at", "duration_ms", "outcome", "status_code"},
						pgx.CopyFromRows(attempts)); err != nil {
						return err
					}
					tag, err := tx.Exec(gctx, `
						UPDATE deliveries d
						SET status = 'delivered', attempt_count = d.attempt_count + 1, lease_expires_at = NULL, lease_owner = NULL,
						    delivered_at = now(), last_status_code = u.code, last_response_ms = u.ms
						FROM unnest($1::bigint[], $2::int[], $3::float8[]) u (id, code, ms)
						WHERE d.id = u.id AND d.lease_owner = 'bench-bare'`, ids, codes, ms)
					done = tag.RowsAffected()
					return err
				})
				if err != nil {
					return err
				}
				for range b {
					<-slots
				}
				mu.Lock()
				delivered += int(done)
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	d := time.Since(start)
	if err != nil {
		return Phase{}, err
	}
	if delivered != o.Deliveries {
		return Phase{}, fmt.Errorf("bare worker recorded %d of %d deliveries", delivered, o.Deliveries)
	}
	return Phase{Count: delivered, Duration: d}, nil
}

// endpointURLs maps the seeded endpoints to their URLs.
func endpointURLs(ctx context.Context, pool *pgxpool.Pool) (map[int64]string, error) {
	rows, err := pool.Query(ctx, "SELECT id, url FROM endpoints")
	if err != nil {
		return nil, err
	}
	m := map[int64]string{}
	var id int64
	var url string
	_, err = pgx.ForEachRow(rows, []any{&id, &url}, func() error {
		m[id] = url
		return nil
	})
	if err == nil && len(m) == 0 {
		err = errors.New("no endpoints")
	}
	return m, err
}
