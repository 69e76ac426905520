package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/hookline/hookline/db/dbtest"
)

// TestEdgeAttackWalk walks a running "hookline serve" from outside as an
// attacker would: huge and multipart bodies, slow connections, parallel
// password guessing, the security headers, anonymous metrics, a forged
// Host for portal links, a login CSRF into a portal, out-of-scope API
// keys, and partner test fires at loopback. Nothing may answer 5xx, and
// nothing that should fail may succeed.
func TestEdgeAttackWalk(t *testing.T) {
	t.Parallel()
	env := serveEnv(t, dbtest.URL(t))
	env["HOOKLINE_PUBLIC_URL"] = "http://hooks.hookline.test"
	env["HOOKLINE_METRICS_TOKEN"] = "" // as deployed: no anonymous metrics on the public listener
	p := start(t, env)
	base := "http://" + p.addr
	admin := lastLine(command(t, env, "", "apikey", "create", "--name", "ops", "--scope", "admin"))
	ingest := lastLine(command(t, env, "", "apikey", "create", "--name", "producer", "--scope", "ingest"))
	command(t, env, "correct horse battery staple\n", "user", "add", "--email", "ops@hookline.test", "--role", "admin", "--password-stdin")
	// bcrypt at the production cost takes seconds a check under -race on
	// a loaded machine; a minimum-cost hash checks the same way.
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "UPDATE users SET password_hash = $1 WHERE email = 'ops@hookline.test'", string(hash)); err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())

	var fivexx atomic.Int64
	client := &http.Client{Timeout: 120 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) *http.Response {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 {
			fivexx.Add(1)
			t.Errorf("%s %s: %d", req.Method, req.URL.Path, res.StatusCode)
		}
		return res
	}
	t.Cleanup(func() {
		if n := fivexx.Load(); n > 0 {
			t.Errorf("%d answers were 5xx", n)
		}
	})

	t.Run("huge and multipart bodies", func(t *testing.T) {
		for _, tc := range []struct {
			path, ct, auth string
			want           int
		}{
			{"/api/v1/events", "application/json", "", http.StatusUnauthorized},
			{"/api/v1/events", "multipart/form-data; boundary=x", "", http.StatusUnsupportedMediaType},
			{"/api/v1/events/batch", "application/json", "Bearer " + ingest, http.StatusRequestEntityTooLarge},
			{"/login", "application/x-www-form-urlencoded", "", http.StatusRequestEntityTooLarge},
			{"/portal/signin", "application/x-www-form-urlencoded", "", http.StatusRequestEntityTooLarge},
			{"/partners", "application/x-www-form-urlencoded", "", http.StatusUnauthorized},
		} {
			req, _ := http.NewRequest(http.MethodPost, base+tc.path, io.MultiReader(io.LimitReader(zeros{}, 50<<20)))
			req.Header.Set("Content-Type", tc.ct)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if res := do(req); res.StatusCode != tc.want && !(res.StatusCode == http.StatusForbidden && tc.want == http.StatusRequestEntityTooLarge && tc.path != "/api/v1/events/batch") {
				t.Errorf("%s (%s): %d, want %d", tc.path, tc.ct, res.StatusCode, tc.want)
			}
		}
	})

	t.Run("slow connections do not stop a normal request", func(t *testing.T) {
		var conns []net.Conn
		for range 50 {
			c, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			c.Write([]byte("POST /login HTTP/1.1\r\nHost: x\r\n"))
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		if res := do(req); res.StatusCode != http.StatusOK {
			t.Fatalf("healthz beside 50 slow connections: %d", res.StatusCode)
		}
	})

	t.Run("parallel password guesses are counted before they are checked", func(t *testing.T) {
		res, err := client.Get(base + "/login")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := regexp.MustCompile(`name="login_token" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatal("no login token on the login page")
		}
		// Every guess carries the one page's cookie and token, as a script
		// would (a cookie jar would take the new token each answer sets).
		cookies := res.Cookies()
		var mu sync.Mutex
		counts := map[int]int{}
		var wg sync.WaitGroup
		for range 30 {
			wg.Go(func() {
				form := url.Values{"login_token": {string(m[1])}, "email": {"ops@hookline.test"}, "password": {"wrong guess"}}
				req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for _, c := range cookies {
					req.AddCookie(c)
				}
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if counts[http.StatusUnauthorized] > 5 || counts[http.StatusTooManyRequests] < 25 || counts[http.StatusSeeOther] > 0 {
			t.Fatalf("answers %v: want at most 5 evaluated (401), the rest 429", counts)
		}
	})

	t.Run("security headers and anonymous metrics", func(t *testing.T) {
		for _, path := range []string{"/login", "/no-such-page", "/healthz"} {
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			res := do(req)
			csp := res.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") ||
				res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "same-origin" {
				t.Errorf("%s: headers %v", path, res.Header)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		if res := do(req); res.StatusCode != http.StatusNotFound {
			t.Errorf("anonymous /metrics: %d", res.StatusCode)
		}
	})

	// Setup as the operator: a partner with an endpoint, managed in the
	// portal.
	apiJSON := func(key, method, path string, body any, host string) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			r = bytes.NewReader(j)
		}
		req, _ := http.NewRequest(method, base+path, r)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode >= 500 {
			fivexx.Add(1)
			t.Errorf("%s %s: %d", method, path, res.StatusCode)
		}
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	st, partner := apiJSON(admin, http.MethodPost, "/api/v1/partners", map[string]any{"name": "Acme", "portal_manage_endpoints": true}, "")
	if st != http.StatusCreated {
		t.Fatalf("partner: %d %v", st, partner)
	}
	pid := int64(partner["id"].(float64))
	st, ep := apiJSON(admin, http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": "acme", "kind": "webhook",
		"url": "http://127.0.0.1:9/in", "headers": map[string]string{"X-Secret": "s3cret-value"}}, "")
	if st != http.StatusCreated {
		t.Fatalf("endpoint: %d %v", st, ep)
	}
	eid := int64(ep["id"].(float64))

	t.Run("scopes: a producer's key posts events and nothing more", func(t *testing.T) {
		if st, _ := apiJSON(ingest, http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}}, ""); st != http.StatusAccepted {
			t.Errorf("ingest key posting an event: %d", st)
		}
		for _, c := range []struct{ method, path string }{
			{http.MethodPost, fmt.Sprintf("/api/v1/partners/%d/portal-links", pid)},
			{http.MethodGet, "/api/v1/endpoints"},
			{http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", eid)},
			{http.MethodPost, "/api/v1/notification-channels"},
		} {
			if st, body := apiJSON(ingest, c.method, c.path, map[string]any{}, ""); st != http.StatusForbidden {
				t.Errorf("ingest key %s %s: %d %v", c.method, c.path, st, body)
			}
		}
	})

	t.Run("portal links ignore a forged Host", func(t *testing.T) {
		st, link := apiJSON(admin, http.MethodPost, fmt.Sprintf("/api/v1/partners/%d/portal-links", pid), nil, "attacker.invalid")
		if st != http.StatusCreated || !strings.HasPrefix(fmt.Sprint(link["url"]), "http://hooks.hookline.test/portal/signin?token=") {
			t.Fatalf("link: %d %v", st, link)
		}
	})

	t.Run("partner test fires cannot reach loopback or carry the stored secret", func(t *testing.T) {
		var hits atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		defer rcv.Close()
		_, link := apiJSON(admin, http.MethodPost, fmt.Sprintf("/api/v1/partners/%d/portal-links", pid), nil, "")
		u, _ := url.Parse(fmt.Sprint(link["url"]))
		jar, _ := cookiejar.New(nil)
		b := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		// A login CSRF: the token posted without this browser's page.
		res, err := b.PostForm(base+"/portal/signin", url.Values{"token": {u.Query().Get("token")}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("sign-in without the page's token: %d", res.StatusCode)
		}
		res, err = b.Get(base + u.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		csrf := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(page)
		if csrf == nil {
			t.Fatal("no csrf_token on the sign-in page")
		}
		res, err = b.PostForm(base+"/portal/signin", url.Values{"token": {u.Query().Get("token")}, "csrf_token": {string(csrf[1])}})
		if err != nil {
			t.Fatal(err)
		}
		portalPage, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Request.URL.Path != "/portal/" {
			t.Fatalf("portal sign-in landed at %s (%d)", res.Request.URL.Path, res.StatusCode)
		}
		token := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindSubmatch(portalPage)
		if token == nil {
			t.Fatal("no CSRF token in the portal")
		}
		for _, form := range []url.Values{
			{"url": {rcv.URL + "/"}},
			{"url": {base + "/metrics"}},
			{"url": {"http://[::ffff:127.0.0.1]:9/"}},
			{"url": {"http://127.0.0.1:9/elsewhere"}, "headers": {"X-Secret: ********"}},
		} {
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/portal/endpoints/%d/test-fire", base, eid), strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-CSRF-Token", string(token[1]))
			req.Header.Set("HX-Request", "true")
			res, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				fivexx.Add(1)
			}
			if strings.Contains(string(body), "hookline_") || strings.Contains(string(body), "s3cret-value") {
				t.Errorf("test fire %v showed what it must not: %.300s", form, body)
			}
			// Refused for its reason, not for want of a session or token.
			if !strings.Contains(string(body), "partners may only use public addresses") && !strings.Contains(string(body), "type the value again") {
				t.Errorf("test fire %v: %d, not refused for its destination or credential: %.400s", form, res.StatusCode, body)
			}
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the loopback receiver got %d requests from partner test fires", n)
		}
	})
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
