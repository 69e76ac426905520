package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/ssrf"
)

// EventLogOptions configure an event log run.
type EventLogOptions struct {
	Events int64 // events to populate (default 10,000,000)
	// DataDir keeps the populated cluster between runs (populating 10
	// million events takes a while); a temporary one when empty.
	DataDir string
	// DatabaseURL, when set, is used instead of a private cluster; it
	// must be empty or populated by an earlier run.
	DatabaseURL string
	Requests    int  // timed requests per case (default 100)
	Retention   bool // afterwards, run retention passes until they find nothing to delete
	Logger      *slog.Logger
	// Handler builds hookline's HTTP handler on pool; the run signs in
	// with an API key and a dashboard user it creates through signIn.
	Handler func(pool *pgxpool.Pool) (http.Handler, error)
	// SignIn creates an API key and an operator, returning the key and the
	// operator's email and password.
	SignIn func(ctx context.Context, pool *pgxpool.Pool) (apiKey, email, password string, err error)
}

// EventLog measures the event log's server time on a large database: the
// API and dashboard requests an operator handling a ticket makes (search
// by click id or idempotency key, the first and following pages under each
// single filter, an event's page), each timed in-process through the full
// handler (routing, auth, queries, JSON or templ rendering), reported as
// p50 / p95 / max. The database is populated first if it is empty.
func EventLog(ctx context.Context, o EventLogOptions, out io.Writer) error {
	if o.Events <= 0 {
		o.Events = 10_000_000
	}
	if o.Requests <= 0 {
		o.Requests = 100
	}
	bdb, err := openBenchDB(ctx, o.DatabaseURL, o.DataDir, 0, o.Logger, out)
	if err != nil {
		return err
	}
	defer bdb.close()
	pool := bdb.pool
	var have int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&have); err != nil {
		return err
	}
	if have == 0 {
		fmt.Fprintf(out, "populating %d events...\n", o.Events)
		r, err := Populate(ctx, pool, o.Events, out)
		if err != nil {
			return err
		}
		have = r.Events
		fmt.Fprintf(out, "populated %d events, %d deliveries, %d attempts in %s (%.0f rows/s)\n",
			r.Events, r.Deliveries, r.Attempts, r.Duration.Round(time.Second),
			float64(r.Events+r.Deliveries+r.Attempts)/r.Duration.Seconds())
	} else {
		var mark *string
		if err := pool.QueryRow(ctx, `SELECT obj_description('events'::regclass, 'pg_class')`).Scan(&mark); err != nil {
			return err
		}
		if mark == nil || !strings.HasPrefix(*mark, "populated: ") {
			return fmt.Errorf("the database has %d events but no complete population (an interrupted run?): start from an empty data directory", have)
		}
		// Identifiers are derived from the event numbers populated, however
		// many retention has deleted since.
		if _, err := fmt.Sscanf(*mark, "populated: %d events", &o.Events); err != nil {
			return fmt.Errorf("the population mark %q: %w", *mark, err)
		}
	}
	var sized []string
	for _, table := range []string{"deliveries", "delivery_attempts", "events"} {
		var size string
		if err := pool.QueryRow(ctx, "SELECT pg_size_pretty(("+sizeOfTable+"))", table).Scan(&size); err != nil {
			return err
		}
		sized = append(sized, table+" "+size)
	}
	sizes := strings.Join(sized, ", ")
	var nd, na int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM delivery_attempts)`).Scan(&nd, &na); err != nil {
		return err
	}
	fmt.Fprintf(out, "database: %d events, %d deliveries, %d attempts (with indexes: %s)\n", have, nd, na, sizes)

	h, err := o.Handler(pool)
	if err != nil {
		return err
	}
	key, email, password, err := o.SignIn(ctx, pool)
	if err != nil {
		return err
	}
	api := client{h: h, header: http.Header{"Authorization": {"Bearer " + key}}}
	dash := client{h: h, header: http.Header{}}
	if err := dash.signIn(email, password); err != nil {
		return err
	}

	// Event numbers g are what Populate derived every identifier from.
	rng := rand.New(rand.NewPCG(1, 2))
	n := o.Events
	// Events from the newest three quarters: retention (-retention, 7 of
	// the 8 days kept) may have deleted older ones in an earlier run.
	randG := func() int64 { return n/4 + 1 + rng.Int64N(n-n/4) }
	threeDeliveries := func() int64 { // g % 3 == 2 fans out to three endpoints; g%1000 != 0 keeps it at three
		for {
			if g := randG(); g%3 == 2 && g%1000 != 0 {
				return g
			}
		}
	}
	var uuidOf = func(g int64) (string, error) {
		var id string
		err := pool.QueryRow(ctx, "SELECT md5('ev' || $1::bigint)::uuid::text", g).Scan(&id)
		return id, err
	}
	var clickOf = func(g int64) (string, error) {
		var c string
		err := pool.QueryRow(ctx, "SELECT md5('c' || $1::bigint)", g).Scan(&c)
		return c, err
	}
	day := time.Now().UTC().Add(-3 * 24 * time.Hour).Truncate(time.Hour)

	type kase struct {
		name string
		c    *client
		path func() (string, error)
		// follow pages through next_cursor: 0 = the first page only.
		pages int
	}
	fixed := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }
	cases := []kase{
		{"search by click id (API)", &api, func() (string, error) {
			c, err := clickOf(randG())
			return "/api/v1/events?q=" + c, err
		}, 0},
		{"search by idempotency key (API)", &api, func() (string, error) {
			return fmt.Sprintf("/api/v1/events?q=ord-%d", 2*(randG()/2+1)), nil
		}, 0},
		{"search by click id (/events page)", &dash, func() (string, error) {
			c, err := clickOf(randG())
			return "/events?q=" + c, err
		}, 0},
		{"first page, no filter", &api, fixed("/api/v1/events"), 0},
		{"first page, type", &api, fixed("/api/v1/events?type=order.paid"), 0},
		{"first page, type prefix", &api, fixed("/api/v1/events?type=order.*"), 0},
		{"first page, busy partner", &api, fixed("/api/v1/events?partner_id=7"), 0},
		{"first page, quiet partner (1 event in 1,000)", &api, fixed("/api/v1/events?partner_id=30"), 0},
		{"first page, busy endpoint", &api, fixed("/api/v1/events?endpoint_id=42"), 0},
		{"first page, quiet endpoint (1 event in 10,000)", &api, fixed("/api/v1/events?endpoint_id=295"), 0},
		{"first page, status pending", &api, fixed("/api/v1/events?status=pending"), 0},
		{"first page, status awaiting_retry", &api, fixed("/api/v1/events?status=awaiting_retry"), 0},
		{"first page, status in_flight", &api, fixed("/api/v1/events?status=in_flight"), 0},
		{"first page, status delivered", &api, fixed("/api/v1/events?status=delivered"), 0},
		{"first page, status dead", &api, fixed("/api/v1/events?status=dead"), 0},
		{"first page, a past hour (since+until)", &api, fixed("/api/v1/events?since=" + day.Format(time.RFC3339) + "&until=" + day.Add(time.Hour).Format(time.RFC3339)), 0},
		{"first page, dead in the last hour (the overview's tile)", &api, fixed("/api/v1/events?status=dead&since=" + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)), 0},
		{"/events page, no filter", &dash, fixed("/events"), 0},
		{"/events page, status dead", &dash, fixed("/events?status=dead"), 0},
		{"pages 2-20, no filter", &api, fixed("/api/v1/events"), 19},
		{"pages 2-20, busy endpoint", &api, fixed("/api/v1/events?endpoint_id=42"), 19},
		{"pages 2-20, quiet endpoint", &api, fixed("/api/v1/events?endpoint_id=295"), 19},
		{"pages 2-20, status dead", &api, fixed("/api/v1/events?status=dead"), 19},
		{"pages 2-20, type", &api, fixed("/api/v1/events?type=order.paid"), 19},
		{"event, 3 deliveries (API)", &api, func() (string, error) {
			id, err := uuidOf(threeDeliveries())
			return "/api/v1/events/" + id, err
		}, 0},
		{"/events/{id} page, 3 deliveries", &dash, func() (string, error) {
			id, err := uuidOf(threeDeliveries())
			return "/events/" + id, err
		}, 0},
		{"endpoint attempt log, failures only", &api, fixed("/api/v1/endpoints/42/attempts?outcome=failed"), 0},
	}
	fmt.Fprintf(out, "%-58s %9s %9s %9s  (server time, %d requests each)\n", "request", "p50", "p95", "max", o.Requests)
	for _, k := range cases {
		var ds []time.Duration
		runs := o.Requests
		if k.pages > 0 { // each walk times k.pages requests
			runs = max(3, o.Requests/10)
		}
		for i := -5; i < runs; i++ { // five untimed warm-ups
			p, err := k.path()
			if err != nil {
				return err
			}
			var d time.Duration
			if k.pages == 0 {
				d, _, err = k.c.get(p)
			} else {
				// Walk to the pages, timing only those after the first.
				_, cur, err2 := k.c.get(p)
				err = err2
				for j := 0; j < k.pages && err == nil && cur != ""; j++ {
					var dj time.Duration
					dj, cur, err = k.c.get(p + sep(p) + "cursor=" + url.QueryEscape(cur))
					if i >= 0 {
						ds = append(ds, dj)
					}
				}
				if err != nil {
					return fmt.Errorf("%s: %w", k.name, err)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			if i >= 0 {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			fmt.Fprintf(out, "%-58s no pages\n", k.name)
			continue
		}
		slices.Sort(ds)
		fmt.Fprintf(out, "%-58s %9s %9s %9s\n", k.name, ms(quantile(ds, 0.5)), ms(quantile(ds, 0.95)), ms(ds[len(ds)-1]))
	}
	if o.Retention {
		return retention(ctx, pool, out)
	}
	return nil
}

// retention runs the worker's retention passes (the default 7 days; each
// pass bounded to 5 s, run once a minute in production) back to back until
// one ends inside its budget, and reports each table's rows deleted, the
// passes it took, and the cost of a caught-up pass, which every replica
// pays once a minute from then on.
func retention(ctx context.Context, pool *pgxpool.Pool, out io.Writer) error {
	key := make([]byte, 32)
	w, err := worker.New(worker.Config{Pool: pool, SecretKey: key, Guard: ssrf.New(nil)})
	if err != nil {
		return err
	}
	counts := func() (ev, dl, at int64, err error) {
		err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM deliveries),
			(SELECT count(*) FROM delivery_attempts)`).Scan(&ev, &dl, &at)
		return
	}
	e0, d0, a0, err := counts()
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "retention (7 days, the worker's passes):")
	var total time.Duration
	for pass := 1; ; pass++ {
		_, d1, a1, err := counts()
		if err != nil {
			return err
		}
		start := time.Now()
		if err := w.RetainNow(ctx); err != nil {
			return err
		}
		took := time.Since(start)
		total += took
		e2, d2, a2, err := counts()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  pass %d: %s, deleted %d deliveries, %d attempts (%d events so far)\n", pass, took.Round(time.Millisecond), d1-d2, a1-a2, e0-e2)
		// A pass that ends well inside its 5 s budget found everything
		// past the cutoff deleted: retention has caught up (time moves
		// on, so a few rows cross the cutoff between passes).
		if took < 4*time.Second {
			fmt.Fprintf(out, "  caught up: %d events, %d deliveries, %d attempts deleted in %d passes (%s)\n",
				e0-e2, d0-d2, a0-a2, pass, total.Round(time.Millisecond))
			// The passes every replica then runs once a minute.
			for i := range 3 {
				start := time.Now()
				if err := w.RetainNow(ctx); err != nil {
					return err
				}
				fmt.Fprintf(out, "  steady pass %d: %s\n", i+1, time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if pass >= 200 {
			return fmt.Errorf("retention did not finish in 200 passes")
		}
	}
}

func sep(p string) string {
	if strings.Contains(p, "?") {
		return "&"
	}
	return "?"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// client sends requests straight to the handler and keeps its cookies.
type client struct {
	h       http.Handler
	header  http.Header
	cookies map[string]*http.Cookie
}

var loginToken = regexp.MustCompile(`name="login_token"[^>]*value="([^"]+)"`)

func (c *client) signIn(email, password string) error {
	rec := c.do(httptest.NewRequest(http.MethodGet, "/login", nil))
	m := loginToken.FindStringSubmatch(rec.Body.String())
	if m == nil {
		return fmt.Errorf("GET /login: %d, no login form", rec.Code)
	}
	form := url.Values{"login_token": {m[1]}, "email": {email}, "password": {password}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = c.do(req)
	if rec.Code != http.StatusSeeOther && rec.Code != http.StatusFound {
		return fmt.Errorf("POST /login: %d", rec.Code)
	}
	return nil
}

func (c *client) do(req *http.Request) *httptest.ResponseRecorder {
	for k, v := range c.header {
		req.Header[k] = v
	}
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if c.cookies == nil {
		c.cookies = map[string]*http.Cookie{}
	}
	for _, ck := range rec.Result().Cookies() {
		c.cookies[ck.Name] = ck
	}
	return rec
}

// get times one GET through the handler and returns the page's next
// cursor (API lists).
func (c *client) get(path string) (time.Duration, string, error) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	start := time.Now()
	rec := c.do(req)
	d := time.Since(start)
	if rec.Code != http.StatusOK {
		return d, "", fmt.Errorf("GET %s: %d %s", path, rec.Code, strings.TrimSpace(rec.Body.String()[:min(200, rec.Body.Len())]))
	}
	var cur string
	if strings.HasPrefix(path, "/api/") {
		var body struct {
			NextCursor *string `json:"next_cursor"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &body) == nil && body.NextCursor != nil {
			cur = *body.NextCursor
		}
	}
	return d, cur, nil
}
