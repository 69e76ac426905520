package web

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

type auditPageJSON struct {
	Data       []auditEntryJSON `json:"data"`
	NextCursor *string          `json:"next_cursor"`
}

// TestAPIAuditList: GET /api/v1/audit pages the log newest first by a
// cursor that entries added meanwhile do not shift, and filters it by
// actor, action (or an action prefix), target and time.
func TestAPIAuditList(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.exec(`INSERT INTO audit_log (at, actor, action, target_type, target_id, details)
		SELECT now() - make_interval(mins => 200 - n), 'user:ana@hooks.test', 'test.page', 'endpoint', (n % 3 + 1)::text, jsonb_build_object('n', n)
		FROM generate_series(1, 120) n`)
	env.exec(`INSERT INTO audit_log (at, actor, action, target_type, target_id) VALUES
		(now() - interval '3 hours', 'api_key:hk_abc', 'partner.update', 'partner', '7'),
		(now() - interval '1 hour', 'cli', 'endpoint.pause', 'endpoint', '7'),
		(now() - interval '30 minutes', 'user:bo@hooks.test', 'endpoint.resume', 'endpoint', '7')`)
	list := func(query string) auditPageJSON {
		t.Helper()
		rec := env.do(http.MethodGet, "/api/v1/audit?"+query, nil)
		mustStatus(t, rec, http.StatusOK)
		return decodeBody[auditPageJSON](t, rec)
	}

	t.Run("pages by cursor", func(t *testing.T) {
		seen := map[int64]bool{}
		var last int64
		cursor, pages := "", 0
		for {
			q := url.Values{"action": {"test.page"}, "limit": {"50"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			page := list(q.Encode())
			pages++
			if pages == 1 {
				// Entries added after the first page never shift the next.
				env.exec(`INSERT INTO audit_log (actor, action) SELECT 'user:ana@hooks.test', 'test.page' FROM generate_series(1, 10)`)
			}
			for _, e := range page.Data {
				if seen[e.ID] || (last != 0 && e.ID >= last) {
					t.Fatalf("entry %d out of order or twice (after %d)", e.ID, last)
				}
				seen[e.ID], last = true, e.ID
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if len(seen) != 120 || pages != 3 {
			t.Fatalf("%d entries in %d pages, want 120 in 3", len(seen), pages)
		}
	})

	t.Run("filters", func(t *testing.T) {
		for query, want := range map[string][]string{
			"actor=cli":                                 {"endpoint.pause"},
			"action=endpoint.pause":                     {"endpoint.pause"},
			"action=endpoint.*":                         {"endpoint.resume", "endpoint.pause"},
			"target_type=endpoint&target_id=7":          {"endpoint.resume", "endpoint.pause"},
			"target_type=partner":                       {"partner.update"},
			"actor=api_key:hk_abc&target_type=endpoint": nil,
			"action=endpoint.*&since=" + url.QueryEscape(time.Now().Add(-45*time.Minute).UTC().Format(time.RFC3339)): {"endpoint.resume"},
			"action=endpoint.*&until=" + url.QueryEscape(time.Now().Add(-45*time.Minute).UTC().Format(time.RFC3339)): {"endpoint.pause"},
		} {
			var got []string
			for _, e := range list(query).Data {
				got = append(got, e.Action)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %v, want %v", query, got, want)
			}
		}
		e := list("action=test.page&target_type=endpoint&target_id=2&limit=1").Data[0]
		var details map[string]any
		if err := json.Unmarshal(e.Details, &details); err != nil || details["n"] == nil || e.Actor != "user:ana@hooks.test" || e.At.IsZero() {
			t.Fatalf("entry %+v (details %v)", e, err)
		}
	})

	t.Run("bad input names the field", func(t *testing.T) {
		for query, field := range map[string]string{
			"target_id=7":     "target_id",
			"cursor=bm9wZQ":   "cursor",
			"since=yesterday": "since",
			"since=2026-05-02T00:00:00Z&until=2026-05-01T00:00:00Z": "until",
			"actor=" + strings.Repeat("a", 201):                     "actor",
			"limit=0":                                               "limit",
		} {
			mustError(t, env.do(http.MethodGet, "/api/v1/audit?"+query, nil), http.StatusUnprocessableEntity, field)
		}
	})
}

// TestAuditPageFiltersAndExport: the dashboard's audit page filters the
// log and pages it with its filters kept; its CSV export streams every
// matching entry (past a batch), as an attachment, with cells a
// spreadsheet would run as formulas defused.
func TestAuditPageFiltersAndExport(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.exec(`INSERT INTO audit_log (actor, action, target_type, target_id, details)
		SELECT 'user:ana@hooks.test', 'endpoint.pause', 'endpoint', n::text, '{}' FROM generate_series(1, 2100) n`)
	env.exec(`INSERT INTO audit_log (actor, action, target_type, target_id, details) VALUES
		('=HYPERLINK("http://evil.invalid")', 'endpoint.rename', 'endpoint', '+1', '{"name": "@SUM(A1)"}'),
		('-2+3', '@import', '', '', '{}'),
		('user:bo@hooks.test', 'partner.update', 'partner', '5', '{}')`)
	b := env.signIn(env.server(), "viewer@hooks.test", "viewer")

	res, doc := b.get("/audit?action=endpoint.*")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("audit page: %d", res.StatusCode)
	}
	if n := doc.Find(`[data-testid=audit-row]`).Length(); n != auditPageSize {
		t.Fatalf("%d rows, want a page of %d", n, auditPageSize)
	}
	if v, _ := doc.Find(`[data-testid=audit-filter] input[name=action]`).Attr("value"); v != "endpoint.*" {
		t.Fatalf("the form lost the filter: %q", v)
	}
	older, _ := doc.Find(`[data-testid=audit-older]`).Attr("href")
	if !strings.Contains(older, "action=endpoint.%2A") || !strings.Contains(older, "cursor=") {
		t.Fatalf("older entries link %q drops the filter or the cursor", older)
	}
	_, doc = b.get(older)
	if doc.Find(`[data-testid=audit-row][data-action="partner.update"]`).Length() > 0 {
		t.Fatal("the second page ignores the filter")
	}
	export, _ := doc.Find(`[data-testid=audit-export]`).Attr("href")
	if export != "/audit/export.csv?action=endpoint.%2A" {
		t.Fatalf("export link %q, want the page's filters", export)
	}

	res, err := b.client.Get(b.base + export)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="hookline-audit-`) || !strings.HasSuffix(cd, `.csv"`) {
		t.Fatalf("Content-Disposition %q", cd)
	}
	records, err := csv.NewReader(res.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1+2101 || strings.Join(records[0], ",") != "id,at,actor,action,target_type,target_id,details" {
		t.Fatalf("%d records (header %v), want the header and 2,101 entries", len(records), records[0])
	}
	first := records[1]
	if first[2] != `'=HYPERLINK("http://evil.invalid")` || first[5] != "'+1" || first[6] != `{"name": "@SUM(A1)"}` {
		t.Fatalf("newest entry %q: formulas not defused", first)
	}

	res2, err := b.client.Get(b.base + "/audit/export.csv?actor=" + url.QueryEscape("-2+3"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if want := "'-2+3,'@import,,,{}"; !strings.Contains(string(body), want) {
		t.Fatalf("export %q does not contain %q", body, want)
	}

	anon := newBrowser(t, b.base)
	anon.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if res, _ := anon.get("/audit/export.csv"); res.StatusCode == http.StatusOK {
		t.Fatal("the export answers without a session")
	}

	res, doc = b.get("/audit/export.csv?since=soon")
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Text(), "since") {
		t.Fatalf("bad since: %d", res.StatusCode)
	}
}
