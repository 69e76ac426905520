package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/signing"
)

// The endpoints' settings in the mix and the outage: a cap of in-flight
// sends, a timeout, and retries enough to outlast an outage of minutes.
type mixSettings struct {
	MaxInFlight int
	Timeout     time.Duration
	MaxAttempts int
	// FailureThreshold opens an endpoint's breaker (default 10, as the
	// drain's endpoints).
	FailureThreshold int
}

// seedMix creates one partner and the receiver's endpoints, endpoint i
// subscribed to eventType(i) alone, and returns their ids.
func seedMix(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, m *mixReceiver, s mixSettings) ([]int64, error) {
	if _, err := pool.Exec(ctx, "TRUNCATE partners, endpoints, endpoint_secrets, endpoint_health, events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return nil, err
	}
	q := db.New(pool)
	p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "bench"})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(m.eps))
	for i, e := range m.eps {
		ep, err := q.EndpointCreate(ctx, db.EndpointCreateParams{
			PartnerID: p.ID, Name: e.name, Kind: "webhook", URL: m.url(e),
			Method: "POST", EventTypes: []string{eventType(i)}, Headers: json.RawMessage(`{}`),
			MaxAttempts: int32(s.MaxAttempts), TimeoutMs: int32(s.Timeout / time.Millisecond),
			MaxInFlight: int32(s.MaxInFlight), FailureThreshold: int32(s.FailureThreshold), Enabled: true,
		})
		if err != nil {
			return nil, err
		}
		if err := q.EndpointHealthCreate(ctx, ep.ID); err != nil {
			return nil, err
		}
		secret, _ := signing.NewSecret(rand.Reader)
		sealed, _ := box.Seal(ep.ID, []byte(secret))
		if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: ep.ID, Ciphertext: sealed}); err != nil {
			return nil, err
		}
		ids[i] = ep.ID
	}
	return ids, nil
}

// poster queues events at a steady rate, each to one endpoint in turn
// (eventType(i)), in transactions of batch events on up to ingesters
// goroutines, until stopped; as pace, a tick that finds every ingester
// busy is dropped, not made up.
type poster struct {
	mu     sync.Mutex
	events int
	err    error
	stop   chan struct{}
	done   chan struct{}
}

func startPoster(ctx context.Context, pool *pgxpool.Pool, rate, batch, ingesters, endpoints int, payload []byte, local localWorker) *poster {
	p := &poster{stop: make(chan struct{}), done: make(chan struct{})}
	var next int
	var nextMu sync.Mutex
	typeOf := func(int) string {
		nextMu.Lock()
		defer nextMu.Unlock()
		t := eventType(next % endpoints)
		next++
		return t
	}
	go func() {
		defer close(p.done)
		var cache filter.Cache
		sem := make(chan struct{}, ingesters)
		var wg sync.WaitGroup
		defer wg.Wait()
		t := time.NewTicker(time.Duration(float64(time.Second) * float64(batch) / float64(rate)))
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			select {
			case sem <- struct{}{}:
			default:
				continue // every ingester busy: this tick is dropped
			}
			wg.Go(func() {
				defer func() { <-sem }()
				ids, err := ingestBatch(ctx, pool, &cache, batch, payload, typeOf, local)
				p.mu.Lock()
				defer p.mu.Unlock()
				p.events += len(ids)
				if err != nil && p.err == nil && ctx.Err() == nil {
					p.err = err
				}
			})
		}
	}()
	return p
}

// end stops posting and returns the events queued.
func (p *poster) end() (int, error) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.events, p.err
}

// ProcessSample is the bench process (worker, receiver and poster) at one moment.
type ProcessSample struct {
	At         time.Duration // since the window opened
	RSS        int64
	Goroutines int
}

// sampleProcess records RSS and goroutines every interval until ctx ends.
func sampleProcess(ctx context.Context, start time.Time, every time.Duration) func() []ProcessSample {
	var mu sync.Mutex
	var s []ProcessSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				s = append(s, ProcessSample{At: time.Since(start).Round(time.Second), RSS: rss(), Goroutines: runtime.NumGoroutine()})
				mu.Unlock()
			}
		}
	}()
	return func() []ProcessSample {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return s
	}
}

// classLatency is enqueue → first attempt over one group of deliveries.
type classLatency struct {
	Deliveries, Attempted int
	Percentiles
}

// latencyByGroup reads enqueue → first attempt of the deliveries whose
// event was created in [from, to), grouped by group[endpoint id] and, when
// every > 0, by the interval of every since from the delivery's event falls
// in (key "group/interval"; else "group").
func latencyByGroup(ctx context.Context, pool *pgxpool.Pool, ids []int64, group []string, from, to time.Time, every time.Duration) (map[string]classLatency, error) {
	secs := 0.0
	if every > 0 {
		secs = every.Seconds()
	}
	rows, err := pool.Query(ctx, `
		WITH g AS (SELECT * FROM unnest($1::bigint[], $2::text[]) AS g(endpoint_id, name)),
		l AS (
			SELECT g.name || CASE WHEN $5::float8 > 0 THEN '/' || floor(extract(epoch FROM ev.created_at - $3::timestamptz) / $5)::int ELSE '' END AS k,
			       extract(epoch FROM (SELECT min(a.started_at) FROM delivery_attempts a WHERE a.delivery_id = d.id) - ev.created_at) * 1000 AS ms
			FROM deliveries d
			JOIN g ON g.endpoint_id = d.endpoint_id
			JOIN events ev ON ev.id = d.event_id
			WHERE ev.created_at >= $3 AND ev.created_at < $4)
		SELECT k, count(*), count(ms),
		       coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), 0),
		       coalesce(percentile_disc(0.95) WITHIN GROUP (ORDER BY ms), 0),
		       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY ms), 0),
		       coalesce(max(ms), 0)
		FROM l GROUP BY k`, ids, group, from, to, secs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]classLatency{}
	for rows.Next() {
		var k string
		var c classLatency
		var p50, p95, p99, mx float64
		if err := rows.Scan(&k, &c.Deliveries, &c.Attempted, &p50, &p95, &p99, &mx); err != nil {
			return nil, err
		}
		c.Percentiles = Percentiles{Count: c.Attempted, P50: msDuration(p50), P95: msDuration(p95), P99: msDuration(p99), Max: msDuration(mx)}
		out[k] = c
	}
	return out, rows.Err()
}

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
