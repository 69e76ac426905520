package demo_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/web/demo"
	"github.com/hookline/hookline/worker/latency"
)

// createEndpoints makes a partner and one endpoint per name, with health
// rows, the way the API does; it returns the ids and the latest created_at.
func createEndpoints(t *testing.T, pool *pgxpool.Pool, names ...string) (map[string]int64, time.Time) {
	t.Helper()
	ctx := context.Background()
	ids := map[string]int64{}
	var created time.Time
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "Demo"})
		if err != nil {
			return err
		}
		for _, n := range names {
			e, err := q.EndpointCreate(ctx, db.EndpointCreateParams{
				PartnerID: p.ID, Name: n, Kind: "webhook", URL: "http://127.0.0.1:9/" + n, Method: "POST",
				EventTypes: []string{}, Headers: json.RawMessage(`{}`), MaxAttempts: 5, TimeoutMs: 15000,
				MaxInFlight: 8, FailureThreshold: 10, Enabled: true,
			})
			if err != nil {
				return err
			}
			if err := q.EndpointHealthCreate(ctx, e.ID); err != nil {
				return err
			}
			ids[n] = e.ID
			created = e.CreatedAt
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, created
}

type histRow struct {
	endpointID           int64
	resolution           int32
	start                time.Time
	count, okCount, fail int64
	sumMs, p50, p95, p99 float64
	buckets              []byte
	decoded              latency.Histogram
}

func histRows(t *testing.T, pool *pgxpool.Pool) []histRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT endpoint_id, resolution_seconds, bucket_start, count, ok_count, fail_count, sum_ms,
		       p50_ms, p95_ms, p99_ms, buckets
		FROM latency_histograms ORDER BY endpoint_id, resolution_seconds, bucket_start`)
	if err != nil {
		t.Fatal(err)
	}
	var out []histRow
	for rows.Next() {
		var r histRow
		var p50, p95, p99 *float64
		if err := rows.Scan(&r.endpointID, &r.resolution, &r.start, &r.count, &r.okCount, &r.fail, &r.sumMs,
			&p50, &p95, &p99, &r.buckets); err != nil {
			t.Fatal(err)
		}
		if p50 != nil {
			r.p50, r.p95, r.p99 = *p50, *p95, *p99
		}
		if err := r.decoded.UnmarshalBinary(r.buckets); err != nil && len(r.buckets) > 0 {
			t.Fatalf("endpoint %d %d s %v: %v", r.endpointID, r.resolution, r.start, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func TestBackfillLatency(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	ids, created := createEndpoints(t, pool, demo.AcmeOrders, demo.AcmeInvoices, demo.LegacyCRM, "not-a-demo-endpoint")

	// A row the worker wrote ("real" data, in the minute the endpoint was
	// created) must survive untouched.
	realStart := created.UTC().Truncate(time.Minute)
	if _, err := pool.Exec(ctx, `INSERT INTO latency_histograms (endpoint_id, resolution_seconds, bucket_start, count, ok_count)
		VALUES ($1, 60, $2, 1, 1)`, ids[demo.LegacyCRM], realStart); err != nil {
		t.Fatal(err)
	}

	o := demo.Options{Pool: pool, Rate: demo.DefaultRate, Seed: 1}
	begin := time.Now()
	if err := demo.BackfillLatency(ctx, o, ids); err != nil {
		t.Fatal(err)
	}
	t.Logf("backfill took %v", time.Since(begin))
	rows := histRows(t, pool)

	byEndpoint := map[int64]map[int32][]histRow{}
	for _, r := range rows {
		if byEndpoint[r.endpointID] == nil {
			byEndpoint[r.endpointID] = map[int32][]histRow{}
		}
		byEndpoint[r.endpointID][r.resolution] = append(byEndpoint[r.endpointID][r.resolution], r)
	}

	t.Run("rows at every resolution for the demo endpoints only", func(t *testing.T) {
		for _, k := range []string{demo.AcmeOrders, demo.AcmeInvoices, demo.LegacyCRM} {
			got := byEndpoint[ids[k]]
			// A day of minutes (the minute of creation and the one being
			// written excluded), its quarters and its hours.
			for res, min := range map[int32]int{60: 1400, 900: 92, 3600: 23} {
				if n := len(got[res]); n < min || n > min+120 {
					t.Errorf("%s: %d rows of %d s, want about %d", k, n, res, min)
				}
			}
		}
		if len(byEndpoint[ids["not-a-demo-endpoint"]]) != 0 {
			t.Error("an endpoint the demo does not know got history")
		}
	})

	t.Run("every row ended before its endpoint was created", func(t *testing.T) {
		for _, r := range rows {
			if r.start.Equal(realStart) {
				continue // the pre-existing row
			}
			if end := r.start.Add(time.Duration(r.resolution) * time.Second); end.After(created) {
				t.Fatalf("endpoint %d: %d s slot at %v ends after creation %v", r.endpointID, r.resolution, r.start, created)
			}
		}
	})

	t.Run("columns match the decoded buckets", func(t *testing.T) {
		for i := range rows {
			r := &rows[i]
			if r.endpointID == ids[demo.LegacyCRM] && r.start.Equal(realStart) && r.resolution == 60 {
				continue // the pre-existing row
			}
			h := &r.decoded
			if h.Count() != r.count || h.OK() != r.okCount || h.Fail() != r.fail || r.count != r.okCount+r.fail || r.count == 0 {
				t.Fatalf("row %+v: buckets say count %d ok %d fail %d", r, h.Count(), h.OK(), h.Fail())
			}
			for _, c := range []struct {
				name      string
				col, want float64
			}{
				{"sum_ms", r.sumMs, msOf(h.Sum())},
				{"p50_ms", r.p50, msOf(h.Quantile(0.5))},
				{"p95_ms", r.p95, msOf(h.Quantile(0.95))},
				{"p99_ms", r.p99, msOf(h.Quantile(0.99))},
			} {
				if math.Abs(c.col-c.want) > 1e-6*math.Max(1, c.want) {
					t.Fatalf("endpoint %d %d s %v: %s %v, buckets say %v", r.endpointID, r.resolution, r.start, c.name, c.col, c.want)
				}
			}
		}
	})

	t.Run("hours and quarters are the merge of their minutes", func(t *testing.T) {
		for _, k := range []string{demo.AcmeOrders, demo.AcmeInvoices} {
			minutes := map[time.Time]int64{}
			for _, r := range byEndpoint[ids[k]][60] {
				minutes[r.start.Truncate(15*time.Minute)] += r.count
				minutes[r.start.Truncate(time.Hour).Add(-time.Nanosecond)] += r.count // hour totals under a distinct key
			}
			for _, r := range byEndpoint[ids[k]][900] {
				if minutes[r.start] != r.count {
					t.Errorf("%s: quarter %v counts %d, its minutes %d", k, r.start, r.count, minutes[r.start])
				}
			}
			for _, r := range byEndpoint[ids[k]][3600] {
				if got := minutes[r.start.Add(-time.Nanosecond)]; got != r.count {
					t.Errorf("%s: hour %v counts %d, its minutes %d", k, r.start, r.count, got)
				}
			}
		}
	})

	// merged merges an endpoint's rows of a resolution within [from, to).
	merged := func(k string, res int32, from, to time.Time) *latency.Histogram {
		var h latency.Histogram
		for i := range byEndpoint[ids[k]][res] {
			r := &byEndpoint[ids[k]][res][i]
			if !r.start.Before(from) && r.start.Before(to) {
				h.Merge(&r.decoded)
			}
		}
		return &h
	}
	end := created.UTC().Truncate(time.Minute)

	t.Run("shapes: steady fast, climbing slow, failing legacy", func(t *testing.T) {
		day := merged(demo.AcmeOrders, 3600, end.Add(-25*time.Hour), end)
		if p95 := day.Quantile(0.95); p95 > 80*time.Millisecond || day.Count() < 100_000 {
			t.Errorf("orders: P95 %v over %d attempts, want a steady fast endpoint", p95, day.Count())
		}
		if f := float64(day.Fail()) / float64(day.Count()); f > 0.01 {
			t.Errorf("orders fail %.3f of the time", f)
		}
		old := merged(demo.AcmeInvoices, 60, end.Add(-12*time.Hour), end.Add(-11*time.Hour))
		recent := merged(demo.AcmeInvoices, 60, end.Add(-15*time.Minute), end)
		if old.Quantile(0.5)*2 > recent.Quantile(0.5) {
			t.Errorf("invoices: P50 %v twelve hours ago, %v now: want a recent climb", old.Quantile(0.5), recent.Quantile(0.5))
		}
		down := merged(demo.LegacyCRM, 60, end.Add(-40*time.Minute), end)
		if down.Count() == 0 || down.OK() != 0 {
			t.Errorf("legacy: %d ok of %d in the last 40 minutes, want all failing", down.OK(), down.Count())
		}
		all := merged(demo.LegacyCRM, 3600, end.Add(-25*time.Hour), end)
		if f := float64(all.Fail()) / float64(all.Count()); f < 0.1 {
			t.Errorf("legacy fails %.3f of the day, want high failure counts", f)
		}
	})

	t.Run("never overwrites, and adds nothing when run again", func(t *testing.T) {
		var count int64
		if err := pool.QueryRow(ctx, `SELECT count FROM latency_histograms WHERE endpoint_id = $1 AND resolution_seconds = 60 AND bucket_start = $2`,
			ids[demo.LegacyCRM], realStart).Scan(&count); err != nil || count != 1 {
			t.Errorf("the existing row now counts %d (%v), want 1", count, err)
		}
		// Later, as on a second `hookline demo` with the same database: the
		// endpoints are older than everything it would write.
		o.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		o.Seed = 2
		if err := demo.BackfillLatency(ctx, o, ids); err != nil {
			t.Fatal(err)
		}
		if n := len(histRows(t, pool)); n != len(rows) {
			t.Errorf("%d rows after a second run, %d before", n, len(rows))
		}
	})

	t.Run("needs a pool", func(t *testing.T) {
		if err := demo.BackfillLatency(ctx, demo.Options{}, ids); err == nil {
			t.Error("no error without a pool")
		}
	})
}
