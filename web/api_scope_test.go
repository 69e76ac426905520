package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/hookline/hookline/web/account"
)

// withKey is the env with a new key of the scope, bound to partner when it
// is not 0.
func (e *testEnv) withKey(scope string, partner int64) *testEnv {
	e.t.Helper()
	spec := account.APIKeySpec{Name: "key " + scope, Scope: scope, CreatedBy: "test"}
	if partner != 0 {
		spec.PartnerID = &partner
	}
	key, _, err := account.CreateScopedAPIKey(context.Background(), e.pool, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return &testEnv{t: e.t, srv: e.srv, pool: e.pool, key: key}
}

// apiRouteScopes is every API route with the scopes that may call it
// besides admin, which may call them all; partner marks the routes a key
// bound to a partner may call (partnerKeyScope). A route missing here fails
// TestAPIRouteScopes: each new route is given its scope on purpose.
var apiRouteScopes = map[string]struct {
	scopes  []string
	partner bool
}{
	"POST /api/v1/events":                              {[]string{account.ScopeIngest}, true},
	"POST /api/v1/events/batch":                        {[]string{account.ScopeIngest}, true},
	"GET /api/v1/events/:id":                           {[]string{account.ScopeIngest, account.ScopeRead}, true},
	"GET /api/v1/events":                               {[]string{account.ScopeRead}, true},
	"POST /api/v1/partners":                            {nil, false},
	"GET /api/v1/partners":                             {[]string{account.ScopeRead}, false},
	"GET /api/v1/partners/:id":                         {[]string{account.ScopeRead}, false},
	"PATCH /api/v1/partners/:id":                       {nil, false},
	"POST /api/v1/endpoints":                           {nil, false},
	"GET /api/v1/endpoints":                            {[]string{account.ScopeRead}, false},
	"GET /api/v1/endpoints/:id":                        {[]string{account.ScopeRead}, false},
	"PATCH /api/v1/endpoints/:id":                      {nil, false},
	"POST /api/v1/endpoints/:id/secrets/rotate":        {nil, false},
	"POST /api/v1/endpoints/:id/pause":                 {nil, false},
	"POST /api/v1/endpoints/:id/resume":                {nil, false},
	"POST /api/v1/endpoints/:id/force-close":           {nil, false},
	"GET /api/v1/endpoints/:id/attempts":               {[]string{account.ScopeRead}, false},
	"POST /api/v1/deliveries/:id/resend":               {nil, false},
	"POST /api/v1/deliveries/replay":                   {nil, false},
	"GET /api/v1/replays/:id":                          {[]string{account.ScopeRead}, false},
	"POST /api/v1/replays/:id/cancel":                  {nil, false},
	"GET /api/v1/stats":                                {[]string{account.ScopeRead}, false},
	"GET /api/v1/audit":                                {[]string{account.ScopeRead}, false},
	"GET /api/v1/dead-letters/clusters":                {[]string{account.ScopeRead}, false},
	"POST /api/v1/dead-letters/replay":                 {nil, false},
	"POST /api/v1/partners/:id/portal-links":           {nil, false},
	"DELETE /api/v1/partners/:id/portal-sessions":      {nil, false},
	"GET /api/v1/partners/:id/notification-contacts":   {nil, false},
	"PATCH /api/v1/partners/:id/notification-contacts": {nil, false},
	"POST /api/v1/notification-channels":               {nil, false},
	"GET /api/v1/notification-channels":                {nil, false}, // a chat channel's URL is its credential
	"DELETE /api/v1/notification-channels/:id":         {nil, false},
	"POST /api/v1/notification-channels/:id/test":      {nil, false},
	"GET /api/v1/conversions":                          {[]string{account.ScopeRead}, true},
	"GET /api/v1/conversions/history":                  {[]string{account.ScopeRead}, true},
}

// apiRoutes lists the API routes of the route table, as "METHOD path".
func apiRoutes(env *testEnv) []string {
	var out []string
	for _, r := range env.srv.Routes() {
		if strings.HasPrefix(r.Path, "/api/v1/") && !strings.HasSuffix(r.Path, "/*") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	sort.Strings(out)
	return out
}

// TestAPIRouteScopes walks every route of the API group with a key of
// each scope, and with keys bound to a partner: a key the route takes is
// never refused (401 or 403), any other is refused with 403
// insufficient_scope and WWW-Authenticate.
func TestAPIRouteScopes(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	partner := env.createPartner("Bound")
	keys := []struct {
		name    string
		scope   string
		partner bool
		env     *testEnv
	}{
		{"ingest", account.ScopeIngest, false, env.withKey(account.ScopeIngest, 0)},
		{"read", account.ScopeRead, false, env.withKey(account.ScopeRead, 0)},
		{"admin", account.ScopeAdmin, false, env.withKey(account.ScopeAdmin, 0)},
		{"ingest bound to a partner", account.ScopeIngest, true, env.withKey(account.ScopeIngest, partner)},
		{"read bound to a partner", account.ScopeRead, true, env.withKey(account.ScopeRead, partner)},
	}
	routes := apiRoutes(env)
	if len(routes) < 20 {
		t.Fatalf("only %d API routes found; route walking is broken", len(routes))
	}
	seen := map[string]bool{}
	for _, route := range routes {
		seen[route] = true
		want, ok := apiRouteScopes[route]
		if !ok {
			t.Errorf("%s has no entry in apiRouteScopes: give it a scope in routes.go and here", route)
			continue
		}
		method, path, _ := strings.Cut(route, " ")
		path = strings.ReplaceAll(path, ":id", "1")
		for _, k := range keys {
			t.Run(route+"/"+k.name, func(t *testing.T) {
				var body any
				if method != http.MethodGet && method != http.MethodDelete {
					body = map[string]any{}
				}
				rec := k.env.do(method, path, body)
				allowed := account.ScopeAllows(k.scope, want.scopes...) && (!k.partner || want.partner)
				if allowed {
					if rec.Code == http.StatusForbidden || rec.Code == http.StatusUnauthorized {
						t.Fatalf("a %s key is refused: %d %s", k.name, rec.Code, rec.Body.String())
					}
					return
				}
				eb := mustError(t, rec, http.StatusForbidden, "")
				if eb.Error.Code != "insufficient_scope" {
					t.Fatalf("code %q, want insufficient_scope: %s", eb.Error.Code, rec.Body.String())
				}
				if h := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(h, `Bearer error="insufficient_scope", scope="`) {
					t.Fatalf("WWW-Authenticate %q", h)
				}
			})
		}
	}
	for route := range apiRouteScopes {
		if !seen[route] {
			t.Errorf("apiRouteScopes names %s, which is not routed", route)
		}
	}
}

// TestAPIInsufficientScopeAnswer: the 403's JSON error and header, as RFC
// 6750 has them, for a route of one scope and a route of two.
func TestAPIInsufficientScopeAnswer(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ingest, read := env.withKey(account.ScopeIngest, 0), env.withKey(account.ScopeRead, 0)
	cases := []struct {
		name, method, path string
		as                 *testEnv
		body               string
		header             string
	}{
		{"admin route, ingest key", http.MethodPost, "/api/v1/partners", ingest,
			`{"error":{"code":"insufficient_scope","message":"this route needs the \"admin\" scope; the key has \"ingest\""}}`,
			`Bearer error="insufficient_scope", scope="admin"`},
		{"read route, ingest key", http.MethodGet, "/api/v1/stats", ingest,
			`{"error":{"code":"insufficient_scope","message":"this route needs the \"read\" scope; the key has \"ingest\""}}`,
			`Bearer error="insufficient_scope", scope="read"`},
		{"ingest route, read key", http.MethodPost, "/api/v1/events", read,
			`{"error":{"code":"insufficient_scope","message":"this route needs the \"ingest\" scope; the key has \"read\""}}`,
			`Bearer error="insufficient_scope", scope="ingest"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == http.MethodPost {
				body = map[string]any{"name": "x", "type": "t", "payload": map[string]any{}}
			}
			rec := tc.as.do(tc.method, tc.path, body)
			mustStatus(t, rec, http.StatusForbidden)
			if got := strings.TrimSpace(rec.Body.String()); got != tc.body {
				t.Fatalf("body %s\nwant %s", got, tc.body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tc.header {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.header)
			}
		})
	}
	t.Run("nothing is created", func(t *testing.T) {
		if n := countRows(t, env.pool, "partners"); n != 0 {
			t.Fatalf("%d partners", n)
		}
		if n := countRows(t, env.pool, "events"); n != 0 {
			t.Fatalf("%d events", n)
		}
	})
}

// TestAPIIngestKeyReadsItsOwnEvents: an ingest key reads back the events
// it posted, one by one and in a batch, and no other: another key's event
// is a 404, as an unknown id is. read and admin keys read every event.
func TestAPIIngestKeyReadsItsOwnEvents(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	mine, other := env.withKey(account.ScopeIngest, 0), env.withKey(account.ScopeIngest, 0)
	read := env.withKey(account.ScopeRead, 0)
	post := func(as *testEnv) string {
		t.Helper()
		rec := as.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
		mustStatus(t, rec, http.StatusAccepted)
		return decodeBody[struct{ ID string }](t, rec).ID
	}
	own, others, admins := post(mine), post(other), post(env)
	rec := mine.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{map[string]any{"type": "t", "payload": map[string]any{}}}})
	mustStatus(t, rec, http.StatusAccepted)
	batched := *decodeBody[struct{ Results []ingestResult }](t, rec).Results[0].ID

	for _, id := range []string{own, batched.String()} {
		mustStatus(t, mine.do(http.MethodGet, "/api/v1/events/"+id, nil), http.StatusOK)
	}
	for _, id := range []string{others, admins} {
		mustError(t, mine.do(http.MethodGet, "/api/v1/events/"+id, nil), http.StatusNotFound, "")
	}
	for _, as := range []*testEnv{read, env} {
		for _, id := range []string{own, others, admins} {
			mustStatus(t, as.do(http.MethodGet, "/api/v1/events/"+id, nil), http.StatusOK)
		}
	}
	var recorded int
	if err := env.pool.QueryRow(t.Context(), `SELECT count(*) FROM events e JOIN api_keys k ON k.id = e.api_key_id`).Scan(&recorded); err != nil || recorded != 4 {
		t.Fatalf("%d events record their key, %v; want 4", recorded, err)
	}
}

// TestAPIPartnerBoundKeys: a key bound to a partner posts that partner's
// events only, and reads and lists only the events delivered to its
// endpoints, with only those deliveries.
func TestAPIPartnerBoundKeys(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p1, p2 := env.createPartner("One"), env.createPartner("Two")
	e1 := env.createEndpoint(map[string]any{"partner_id": p1, "name": "one", "kind": "webhook", "url": "https://one.hookline.test/in"})
	e2 := env.createEndpoint(map[string]any{"partner_id": p2, "name": "two", "kind": "webhook", "url": "https://two.hookline.test/in"})
	ingest, read := env.withKey(account.ScopeIngest, p1), env.withKey(account.ScopeRead, p1)

	type accepted struct {
		ID         string
		Deliveries []deliveryRef
	}
	var own string
	t.Run("an event without partner_id takes the key's", func(t *testing.T) {
		rec := ingest.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "t", "payload": map[string]any{}})
		mustStatus(t, rec, http.StatusAccepted)
		a := decodeBody[accepted](t, rec)
		if len(a.Deliveries) != 1 || a.Deliveries[0].EndpointID != e1.ID {
			t.Fatalf("deliveries %+v, want one to endpoint %d", a.Deliveries, e1.ID)
		}
		own = a.ID
		var pid int64
		if err := env.pool.QueryRow(t.Context(), "SELECT partner_id FROM events WHERE id = $1", a.ID).Scan(&pid); err != nil || pid != p1 {
			t.Fatalf("stored for partner %d, %v; want %d", pid, err, p1)
		}
		mustStatus(t, ingest.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "t", "payload": map[string]any{}, "partner_id": p1}), http.StatusAccepted)
	})
	t.Run("another partner's event is refused", func(t *testing.T) {
		eb := mustError(t, ingest.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "t", "payload": map[string]any{}, "partner_id": p2}), http.StatusForbidden, "partner_id")
		if eb.Error.Code != "partner_mismatch" || !strings.Contains(eb.Error.Message, fmt.Sprint(p1)) {
			t.Fatalf("error %+v", eb.Error)
		}
		rec := ingest.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{
			map[string]any{"type": "t", "payload": map[string]any{}},
			map[string]any{"type": "t", "payload": map[string]any{}, "partner_id": p2},
		}})
		mustStatus(t, rec, http.StatusAccepted)
		res := decodeBody[struct{ Results []ingestResult }](t, rec).Results
		if res[0].Status != ingestAccepted || res[1].Status != ingestRejected || res[1].Error.Code != "partner_mismatch" {
			t.Fatalf("batch results %+v", res)
		}
	})

	// An event for every partner (delivered to both), and one for the
	// other partner only.
	post := func(body map[string]any) accepted {
		rec := env.do(http.MethodPost, "/api/v1/events", body)
		mustStatus(t, rec, http.StatusAccepted)
		return decodeBody[accepted](t, rec)
	}
	shared := post(map[string]any{"type": "t", "payload": map[string]any{}})
	theirs := post(map[string]any{"type": "t", "payload": map[string]any{}, "partner_id": p2})
	if len(shared.Deliveries) != 2 {
		t.Fatalf("shared event deliveries %+v", shared.Deliveries)
	}

	t.Run("reads its partner's events with their deliveries only", func(t *testing.T) {
		for _, id := range []string{own, shared.ID} {
			rec := read.do(http.MethodGet, "/api/v1/events/"+id, nil)
			mustStatus(t, rec, http.StatusOK)
			got := decodeBody[struct{ Deliveries []deliveryJSON }](t, rec)
			if len(got.Deliveries) != 1 || got.Deliveries[0].EndpointID != e1.ID {
				t.Fatalf("event %s: deliveries %+v, want only endpoint %d's", id, got.Deliveries, e1.ID)
			}
		}
		mustError(t, read.do(http.MethodGet, "/api/v1/events/"+theirs.ID, nil), http.StatusNotFound, "")
		// The ingest key reads its own event, not one it did not post.
		mustStatus(t, ingest.do(http.MethodGet, "/api/v1/events/"+own, nil), http.StatusOK)
		mustError(t, ingest.do(http.MethodGet, "/api/v1/events/"+shared.ID, nil), http.StatusNotFound, "")
	})
	t.Run("lists its partner's events", func(t *testing.T) {
		for _, q := range []string{"", "?q=" + theirs.ID, "?endpoint_id=" + fmt.Sprint(e2.ID), "?partner_id=" + fmt.Sprint(p1)} {
			rec := read.do(http.MethodGet, "/api/v1/events"+q, nil)
			mustStatus(t, rec, http.StatusOK)
			var page struct{ Data []eventLogEntry }
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Data {
				if ev.ID.String() == theirs.ID {
					t.Fatalf("%q lists the other partner's event", q)
				}
				for _, d := range ev.Deliveries {
					if d.EndpointID != e1.ID {
						t.Fatalf("%q shows a delivery to endpoint %d", q, d.EndpointID)
					}
				}
			}
			if q == "" && len(page.Data) != 4 { // own, its twin, the batch's, shared
				t.Fatalf("listed %d events, want 4: %s", len(page.Data), rec.Body.String())
			}
		}
		mustError(t, read.do(http.MethodGet, "/api/v1/events?partner_id="+fmt.Sprint(p2), nil), http.StatusForbidden, "partner_id")
	})
	t.Run("other routes refuse it, saying why", func(t *testing.T) {
		eb := mustError(t, read.do(http.MethodGet, "/api/v1/partners", nil), http.StatusForbidden, "")
		if eb.Error.Code != "insufficient_scope" || !strings.Contains(eb.Error.Message, "bound to partner") {
			t.Fatalf("error %+v", eb.Error)
		}
	})
}

// TestAPIKeyPartnerValidation: a key is bound only to an existing active
// partner, and never with the admin scope.
func TestAPIKeyPartnerValidation(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	archived := env.createPartner("Gone")
	env.exec("UPDATE partners SET archived_at = now() WHERE id = $1", archived)
	active := env.createPartner("Here")
	id := func(v int64) *int64 { return &v }
	cases := []struct {
		name  string
		spec  account.APIKeySpec
		field string
	}{
		{"unknown scope", account.APIKeySpec{Name: "k", Scope: "root"}, "scope"},
		{"admin bound to a partner", account.APIKeySpec{Name: "k", Scope: account.ScopeAdmin, PartnerID: id(active)}, "partner"},
		{"unknown partner", account.APIKeySpec{Name: "k", Scope: account.ScopeRead, PartnerID: id(99999)}, "partner"},
		{"archived partner", account.APIKeySpec{Name: "k", Scope: account.ScopeIngest, PartnerID: id(archived)}, "partner"},
		{"no name", account.APIKeySpec{Scope: account.ScopeIngest}, "name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := account.CreateScopedAPIKey(t.Context(), env.pool, tc.spec)
			fe, ok := err.(*account.FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("error %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
	t.Run("no scope is admin", func(t *testing.T) {
		_, row, err := account.CreateScopedAPIKey(t.Context(), env.pool, account.APIKeySpec{Name: "k"})
		if err != nil || row.Scope != account.ScopeAdmin {
			t.Fatalf("scope %q, %v", row.Scope, err)
		}
	})
}
