package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/ssrf"
)

// testEnv is a Server on a fresh database with one API key.
type testEnv struct {
	t    testing.TB
	srv  *Server
	pool *pgxpool.Pool
	key  string
}

// testMetricsToken lets tests scrape /metrics on the test server.
const testMetricsToken = "metrics-token-of-the-tests"

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func newEnv(t testing.TB, mods ...func(*Config)) *testEnv {
	t.Helper()
	pool := dbtest.Pool(t)
	return newEnvWithPool(t, pool, mods...)
}

// allowLoopback lets the test server's sender reach receivers on 127.0.0.1.
func allowLoopback(c *Config) {
	c.Guard = ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func newEnvWithPool(t testing.TB, pool *pgxpool.Pool, mods ...func(*Config)) *testEnv {
	t.Helper()
	cfg := Config{
		Pool:         pool,
		SecretKey:    testKey(1),
		SessionKey:   testKey(2),
		Guard:        ssrf.New(nil),
		MaxBodyBytes: 64 << 10,
		Version:      "test",
		// Portal links are made only with a public URL; tests follow them
		// by path.
		Portal:       PortalConfig{PublicURL: "http://hookline.test"},
		MetricsToken: testMetricsToken,
	}
	for _, m := range mods {
		m(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{t: t, srv: srv, pool: pool}
	if key, _, err := account.CreateAPIKey(context.Background(), pool, "tests", "test"); err == nil {
		env.key = key
	}
	return env
}

// unreachablePool is a pool whose server does not exist: every query fails
// to connect, as during a database outage.
func unreachablePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres:///hookline?host=/nonexistent-hookline-socket&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// do sends a request with the env's API key. body may be a string (sent as
// is) or any value (sent as JSON).
func (e *testEnv) do(method, path string, body any, headers ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec
}

// mustStatus fails unless the response has the status, showing the body.
func mustStatus(t testing.TB, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status = %d, want %d; body: %s", rec.Code, want, rec.Body.String())
	}
}

func decodeBody[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return v
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// mustError checks status, and the error's field when field is not "".
func mustError(t testing.TB, rec *httptest.ResponseRecorder, status int, field string) errorBody {
	t.Helper()
	mustStatus(t, rec, status)
	eb := decodeBody[errorBody](t, rec)
	if eb.Error.Message == "" || eb.Error.Code == "" {
		t.Fatalf("error body lacks code/message: %s", rec.Body.String())
	}
	if field != "" && eb.Error.Field != field {
		t.Fatalf("error field = %q, want %q (%s)", eb.Error.Field, field, eb.Error.Message)
	}
	return eb
}

func (e *testEnv) createPartner(name string) int64 {
	e.t.Helper()
	rec := e.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": name})
	mustStatus(e.t, rec, http.StatusCreated)
	return decodeBody[partnerJSON](e.t, rec).ID
}

func (e *testEnv) createEndpoint(fields map[string]any) endpointJSON {
	e.t.Helper()
	rec := e.do(http.MethodPost, "/api/v1/endpoints", fields)
	mustStatus(e.t, rec, http.StatusCreated)
	return decodeBody[endpointJSON](e.t, rec)
}
