package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// seedEndpoints creates n endpoints across n/10 partners with a full day of
// cached sparklines, as the worker leaves them.
func seedEndpoints(b testing.TB, env *testEnv, n int) {
	ctx := context.Background()
	_, err := env.pool.Exec(ctx, `
		INSERT INTO partners (name) SELECT 'partner ' || g FROM generate_series(1, $1) g;
		`, n/10)
	if err != nil {
		b.Fatal(err)
	}
	_, err = env.pool.Exec(ctx, `
		INSERT INTO endpoints (partner_id, name, kind, url, method)
		SELECT 1 + (g % $2), 'endpoint ' || g, CASE WHEN g % 3 = 0 THEN 'postback' ELSE 'webhook' END,
		       'https://host' || g || '.example/in?cid={click_id}', 'POST'
		FROM generate_series(1, $1) g`, n, n/10)
	if err != nil {
		b.Fatal(err)
	}
	_, err = env.pool.Exec(ctx, `
		INSERT INTO endpoint_health (endpoint_id, p50_ms, p95_ms, p99_ms, sample_count, ok_count, recent_p95_ms, recent_sample_count, state)
		SELECT id, 40 + id % 50, 200 + id % 900, 400 + id % 3000, 5000, 4900, 210 + id % 4000, 200,
		       CASE WHEN id % 50 = 0 THEN 'open' ELSE 'closed' END
		FROM endpoints;
		INSERT INTO endpoint_sparklines (endpoint_id, start, p50, p95, p99, counts)
		SELECT id, now() - interval '24 hours',
		       (SELECT array_agg((30 + (id * g) % 70)::real) FROM generate_series(1, 96) g),
		       (SELECT array_agg((150 + (id * g) % 900)::real) FROM generate_series(1, 96) g),
		       (SELECT array_agg((300 + (id * g) % 3000)::real) FROM generate_series(1, 96) g),
		       (SELECT array_agg(CASE WHEN g % 17 = 0 THEN 0 ELSE 50 END) FROM generate_series(1, 96) g)
		FROM endpoints`)
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEndpointsPage renders /endpoints with 1,000 endpoints (server
// time: three queries, the mapping and the templ render of 3,000
// sparklines) beside the audit page (one query, an empty table) for scale.
//
//	go test -run '^$' -bench Page -benchtime 30x ./web/
func BenchmarkEndpointsPage(b *testing.B) {
	env := newEnv(b)
	seedEndpoints(b, env, 1000)
	base := env.server()
	br := env.signIn(base, "bench@example.com", "viewer")
	for _, page := range []string{"/endpoints", "/endpoints/table?sort=p95", "/audit"} {
		b.Run(strings.TrimPrefix(page, "/"), func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, base+page, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			for _, c := range br.client.Jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			var bytes int
			for b.Loop() {
				rec := httptest.NewRecorder()
				env.srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", page, rec.Code)
				}
				bytes = rec.Body.Len()
			}
			b.ReportMetric(float64(bytes)/1024, "KiB/page-gzipped")
		})
	}
}

// BenchmarkEndpointQueries measures the database time of the endpoints
// table's data (the cached 24 h sparklines of 1,000 endpoints included).
func BenchmarkEndpointQueries(b *testing.B) {
	env := newEnv(b)
	seedEndpoints(b, env, 1000)
	ctx := context.Background()
	for b.Loop() {
		rows, _, _, err := env.srv.endpointData(ctx)
		if err != nil || len(rows) != 1000 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}
