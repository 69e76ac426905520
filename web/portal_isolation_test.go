package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// portalFixture is two partners, each with a webhook endpoint (custom
// header, a queued delivery of its own event, a dead letter, a secret),
// and a portal session for the first.
type portalFixture struct {
	env                *testEnv
	base               string
	a, b               int64 // partner ids: Alpha, Beta
	epA, epB           endpointJSON
	eventA, eventB     string
	deliveryA          int64
	deliveryB          int64
	deadA, deadB       int64
	secretA, secretB   int64
	clusterA, clusterB string
	recvA, recvB       *hookReceiver
	alpha              *browser
}

func newPortalFixture(t *testing.T) *portalFixture {
	t.Helper()
	// The partners' receivers are on loopback: the partner guard opens it
	// too, as an operator opens an on-premise range for partners.
	env := newEnv(t, allowLoopback, allowPartnerLoopback)
	f := &portalFixture{env: env, base: env.server()}
	f.recvA = newHookReceiver(t, http.StatusOK, 0, `{"status":"accepted by alpha"}`)
	f.recvB = newHookReceiver(t, http.StatusOK, 0, `{"status":"accepted by beta"}`)
	f.a, f.b = env.createPartner("Alpha"), env.createPartner("Beta")
	f.epA = env.createEndpoint(map[string]any{"partner_id": f.a, "name": "alpha-hooks", "kind": "webhook", "url": f.recvA.URL + "/alpha",
		"headers": map[string]string{"X-Alpha-Key": "alpha-header-secret"}})
	f.epB = env.createEndpoint(map[string]any{"partner_id": f.b, "name": "beta-hooks", "kind": "webhook", "url": f.recvB.URL + "/beta",
		"headers": map[string]string{"X-Beta-Key": "beta-header-secret"}})
	post := func(partner int64, click string) string {
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "partner_id": partner,
			"payload": map[string]any{"click_id": click, "payout": 1.5}})
		mustStatus(t, rec, http.StatusAccepted)
		return decodeBody[struct {
			ID string `json:"id"`
		}](t, rec).ID
	}
	f.eventA, f.eventB = post(f.a, "click-alpha-1"), post(f.b, "click-beta-1")
	ctx := context.Background()
	row := func(dst *int64, sql string, args ...any) {
		t.Helper()
		if err := env.pool.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	row(&f.deliveryA, "SELECT id FROM deliveries WHERE event_id = $1", f.eventA)
	row(&f.deliveryB, "SELECT id FROM deliveries WHERE event_id = $1", f.eventB)
	env.seedDead(f.epA.ID, "http_status", 500, "", time.Now().Add(-time.Hour))
	env.seedDead(f.epB.ID, "http_status", 500, "", time.Now().Add(-time.Hour))
	row(&f.deadA, "SELECT id FROM deliveries WHERE endpoint_id = $1 AND status = 'dead'", f.epA.ID)
	row(&f.deadB, "SELECT id FROM deliveries WHERE endpoint_id = $1 AND status = 'dead'", f.epB.ID)
	// An old secret of each still signing, as after a rotation with overlap.
	for _, ep := range []int64{f.epA.ID, f.epB.ID} {
		env.exec(`INSERT INTO endpoint_secrets (endpoint_id, ciphertext, created_at, expires_at)
			SELECT endpoint_id, ciphertext, created_at - interval '1 day', now() + interval '1 day' FROM endpoint_secrets WHERE endpoint_id = $1`, ep)
	}
	row(&f.secretA, "SELECT id FROM endpoint_secrets WHERE endpoint_id = $1 AND expires_at IS NOT NULL", f.epA.ID)
	row(&f.secretB, "SELECT id FROM endpoint_secrets WHERE endpoint_id = $1 AND expires_at IS NOT NULL", f.epB.ID)
	f.clusterA = clusterKey{f.epA.ID, "http_status", 500}.String()
	f.clusterB = clusterKey{f.epB.ID, "http_status", 500}.String()
	f.alpha = env.portalSignIn(f.base, f.a, "Alpha")
	return f
}

// betaState is everything a portal action could change of Beta's.
func (f *portalFixture) betaState(t *testing.T) string {
	t.Helper()
	var s string
	err := f.env.pool.QueryRow(context.Background(), `
		SELECT concat_ws('|',
			(SELECT string_agg(id || ':' || status || ':' || replay_count, ',' ORDER BY id) FROM deliveries WHERE endpoint_id = $1),
			(SELECT string_agg(id || ':' || coalesce(expires_at::text, 'current'), ',' ORDER BY id) FROM endpoint_secrets WHERE endpoint_id = $1),
			(SELECT url || ':' || headers::text || ':' || enabled || ':' || event_types::text FROM endpoints WHERE id = $1),
			(SELECT count(*) FROM endpoints WHERE partner_id = (SELECT partner_id FROM endpoints WHERE id = $1)),
			(SELECT state || ':' || paused FROM endpoint_health WHERE endpoint_id = $1),
			(SELECT count(*) FROM audit_log WHERE target_id = $1::text OR details::text LIKE '%' || $1::text || ':%'))`, f.epB.ID).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var routeParam = regexp.MustCompile(`:[a-z]+`)

// TestPortalIsolationWalk hits every portal route that names an object
// with another partner's endpoint, event, delivery and secret ids: each is
// a 404 and nothing of the other partner changes. The lists and the search
// show none of the other partner's data.
//
// Alpha may manage its endpoints, so the management routes answer for
// their ids rather than refusing the permission first.
func TestPortalIsolationWalk(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t)
	f.env.exec("UPDATE partners SET portal_manage_endpoints = true WHERE id = $1", f.a)
	before := f.betaState(t)
	ids := func(path, secretEndpoint string) string {
		return routeParam.ReplaceAllStringFunc(path, func(p string) string {
			switch {
			case p == ":secret":
				return strconv.FormatInt(f.secretB, 10)
			case p == ":id" && strings.HasPrefix(path, "/portal/endpoints/"):
				return secretEndpoint
			case p == ":id" && strings.HasPrefix(path, "/portal/events/"):
				return f.eventB
			case p == ":id" && strings.HasPrefix(path, "/portal/deliveries/"):
				return strconv.FormatInt(f.deadB, 10)
			}
			t.Fatalf("the walk does not know the parameter %s of %s: add it", p, path)
			return ""
		})
	}
	form := url.Values{"overlap": {"0"}, "url": {f.recvA.URL + "/moved"}, "headers": {"X-Alpha-Key: ********"},
		"since": {"2020-01-01T00:00"}, "cluster": {f.clusterB}, "event_types": {"lead.created"}}
	walked := 0
	for _, r := range f.env.srv.Routes() {
		if !strings.HasPrefix(r.Path, "/portal/") || !strings.Contains(r.Path, ":") || r.Path == "/portal/links/:token" ||
			(r.Method != http.MethodGet && r.Method != http.MethodPost) {
			continue
		}
		targets := []string{ids(r.Path, strconv.FormatInt(f.epB.ID, 10))}
		if strings.Contains(r.Path, ":secret") {
			// The other partner's secret under one's own endpoint.
			targets = append(targets, ids(r.Path, strconv.FormatInt(f.epA.ID, 10)))
		}
		for _, path := range targets {
			t.Run(r.Method+" "+path, func(t *testing.T) {
				var res *http.Response
				if r.Method == http.MethodGet {
					res, _ = f.alpha.get(path)
				} else {
					res, _ = f.alpha.postForm(path, url.Values(cloneValues(form)))
				}
				if res.StatusCode != http.StatusNotFound {
					t.Fatalf("%s %s with Beta's ids: %d, want 404", r.Method, path, res.StatusCode)
				}
				// htmx requests too (fragments must not leak either).
				if r.Method == http.MethodPost {
					res, _ = f.alpha.htmx(http.MethodPost, path, cloneValues(form))
					if res.StatusCode != http.StatusNotFound {
						t.Fatalf("htmx %s with Beta's ids: %d, want 404", path, res.StatusCode)
					}
				}
			})
			walked++
		}
	}
	if walked < 18 {
		t.Fatalf("walked only %d portal routes with ids", walked)
	}
	t.Run("a cluster key of another endpoint under one's own", func(t *testing.T) {
		res, _ := f.alpha.postForm("/portal/endpoints/"+strconv.FormatInt(f.epA.ID, 10)+"/replay", url.Values{"cluster": {f.clusterB}})
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("replay Beta's cluster through Alpha's endpoint: %d", res.StatusCode)
		}
	})
	t.Run("a new endpoint is the session partner's, whatever the form says", func(t *testing.T) {
		res, _ := f.alpha.postForm("/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {"alpha-new"}, "url": {f.recvA.URL + "/new"},
			"partner_id": {strconv.FormatInt(f.b, 10)}})
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", res.StatusCode)
		}
		var owner int64
		if err := f.env.pool.QueryRow(t.Context(), "SELECT partner_id FROM endpoints WHERE name = 'alpha-new'").Scan(&owner); err != nil || owner != f.a {
			t.Fatalf("the new endpoint belongs to partner %d (%v), want Alpha %d", owner, err, f.a)
		}
	})
	t.Run("lists and search show none of it", func(t *testing.T) {
		for _, path := range []string{"/portal/", "/portal/events", "/portal/events?q=click-beta-1", "/portal/events?q=" + f.eventB,
			"/portal/endpoints/" + strconv.FormatInt(f.epA.ID, 10), "/portal/events/" + f.eventA} {
			res, doc := f.alpha.get(path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", path, res.StatusCode)
			}
			html, _ := doc.Html()
			q := mustURL(t, path).Query()
			for _, leak := range []string{"beta-hooks", f.eventB, "click-beta-1", "Beta", f.recvB.URL} {
				if leak != q.Get("q") && strings.Contains(html, leak) {
					t.Fatalf("%s shows %q", path, leak)
				}
			}
		}
		for _, q := range []string{"click-beta-1", f.eventB} {
			_, doc := f.alpha.get("/portal/events?q=" + q)
			if testid(doc, "event-row").Length() != 0 {
				t.Fatalf("Beta's %s finds an event", q)
			}
		}
		_, doc := f.alpha.get("/portal/events?q=click-alpha-1")
		if testid(doc, "event-row").Length() != 1 {
			t.Fatal("Alpha's own click id finds nothing")
		}
	})
	if after := f.betaState(t); after != before {
		t.Fatalf("Beta's data changed:\n before %s\n after  %s", before, after)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// TestPortalCSRF: every mutating portal route refuses a request without
// the portal session's CSRF token (form or htmx), with one's own ids, and
// changes nothing.
func TestPortalCSRF(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t)
	// With the management routes allowed, their refusal can only be the
	// CSRF check's.
	f.env.exec("UPDATE partners SET portal_manage_endpoints = true WHERE id = $1", f.a)
	ownState := func() string {
		var s string
		if err := f.env.pool.QueryRow(context.Background(), `SELECT concat_ws('|',
			(SELECT string_agg(id || ':' || status, ',' ORDER BY id) FROM deliveries WHERE endpoint_id = $1),
			(SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1),
			(SELECT url || ':' || enabled || ':' || event_types::text FROM endpoints WHERE id = $1),
			(SELECT count(*) FROM endpoints),
			(SELECT paused FROM endpoint_health WHERE endpoint_id = $1),
			(SELECT count(*) FROM audit_log),
			(SELECT count(*) FROM portal_sessions WHERE revoked_at IS NULL))`, f.epA.ID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := ownState()
	own := func(path string) string {
		return routeParam.ReplaceAllStringFunc(path, func(p string) string {
			switch {
			case p == ":secret":
				return strconv.FormatInt(f.secretA, 10)
			case strings.HasPrefix(path, "/portal/endpoints/"):
				return strconv.FormatInt(f.epA.ID, 10)
			case strings.HasPrefix(path, "/portal/deliveries/"):
				return strconv.FormatInt(f.deadA, 10)
			}
			return "1"
		})
	}
	checked := 0
	for _, r := range f.env.srv.Routes() {
		// The sign-in POST has no session yet: the link's token is its
		// credential (TestPortalLinkAPI).
		if !strings.HasPrefix(r.Path, "/portal/") || r.Method != http.MethodPost || strings.HasSuffix(r.Path, "/*") || r.Path == "/portal/signin" {
			continue
		}
		path := own(r.Path)
		t.Run(path, func(t *testing.T) {
			form := url.Values{"overlap": {"0"}, "url": {f.recvA.URL + "/moved"}, "since": {"2020-01-01T00:00"}, "cluster": {f.clusterA},
				"kind": {"webhook"}, "name": {"forged"}, "event_types": {"lead.created"}}
			req, _ := http.NewRequest(http.MethodPost, f.base+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := f.alpha.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("without a token: %d, want 403", res.StatusCode)
			}
			form.Set("csrf_token", "forged")
			if res, _ := f.alpha.postForm(path, form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("with a forged token: %d, want 403", res.StatusCode)
			}
			req, _ = http.NewRequest(http.MethodPost, f.base+path, strings.NewReader("x=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("HX-Request", "true")
			req.Header.Set("X-CSRF-Token", "forged")
			if res, err = f.alpha.client.Do(req); err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("htmx with a forged token: %d, want 403", res.StatusCode)
			}
		})
		checked++
	}
	if checked < 17 {
		t.Fatalf("only %d mutating portal routes", checked)
	}
	if after := ownState(); after != before {
		t.Fatalf("a refused request changed something:\n before %s\n after  %s", before, after)
	}
}
