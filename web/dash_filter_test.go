package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// storedFilter reads an endpoint's filter as a JSON value ("" for none).
func storedFilter(t testing.TB, env *testEnv, id int64) string {
	t.Helper()
	var f []byte
	if err := env.pool.QueryRow(context.Background(), "SELECT filter FROM endpoints WHERE id = $1", id).Scan(&f); err != nil {
		t.Fatal(err)
	}
	if f == nil {
		return ""
	}
	var v any
	_ = json.Unmarshal(f, &v)
	b, _ := json.Marshal(v) // keys sorted: comparable
	return string(b)
}

func withFilterRows(v url.Values, rows ...[3]string) url.Values {
	for _, r := range rows {
		v.Add("filter_field", r[0])
		v.Add("filter_op", r[1])
		v.Add("filter_value", r[2])
	}
	return v
}

func TestEndpointFormFilterBuilder(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	op := env.signIn(base, "op@example.com", "operator")
	path := fmt.Sprintf("/partners/%d/endpoints", pid)

	t.Run("rows become the stored filter", func(t *testing.T) {
		v := withFilterRows(endpointForm(map[string]string{"name": "filtered"}),
			[3]string{"status", "eq", "approved"}, [3]string{"payout", "gte", "1"},
			[3]string{"country", "in", "BR, PT"}, [3]string{"", "eq", ""}, // a blank row
			[3]string{"sub.zip", "eq", "007"}, [3]string{"test", "not_exists", ""})
		v.Set("filter_json", `{"$or": [{"tier": "gold"}, {"payout": {"$gte": 10}}]}`)
		res, doc := op.postForm(path, v)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("status %d: %s", res.StatusCode, testid(doc, "form-errors").Text())
		}
		var id int64
		if err := env.pool.QueryRow(context.Background(), "SELECT id FROM endpoints WHERE name = 'filtered'").Scan(&id); err != nil {
			t.Fatal(err)
		}
		want := `{"$or":[{"tier":"gold"},{"payout":{"$gte":10}}],"country":{"$in":["BR","PT"]},"payout":{"$gte":1},"status":"approved","sub.zip":"007","test":{"$exists":false}}`
		if got := storedFilter(t, env, id); got != want {
			t.Fatalf("stored filter\n%s\nwant\n%s", got, want)
		}

		// The edit form shows it back: rows for what rows can say, the
		// rest as JSON, and saving it unchanged keeps the same filter.
		_, doc = op.get(fmt.Sprintf("/endpoints/%d/edit", id))
		var fields []string
		doc.Find(`input[name=filter_field]`).Each(func(_ int, s *goquery.Selection) {
			fields = append(fields, s.AttrOr("value", ""))
		})
		if got := strings.Join(fields, ","); got != "country,payout,status,sub.zip,test,," {
			t.Fatalf("edit rows = %q", got)
		}
		if js := doc.Find(`textarea[name=filter_json]`).Text(); !strings.Contains(js, `"$or"`) {
			t.Fatalf("edit JSON box = %q", js)
		}
		form := url.Values{}
		doc.Find(`#endpoint-form input, #endpoint-form textarea, #endpoint-form select`).Each(func(_ int, s *goquery.Selection) {
			name, ok := s.Attr("name")
			if !ok {
				return
			}
			switch {
			case s.Is("textarea"):
				form.Add(name, s.Text())
			case s.Is("select"):
				form.Add(name, s.Find("option[selected]").AttrOr("value", s.Find("option").First().AttrOr("value", "")))
			case s.AttrOr("type", "") == "checkbox":
				if _, on := s.Attr("checked"); on {
					form.Add(name, s.AttrOr("value", ""))
				}
			default:
				form.Add(name, s.AttrOr("value", ""))
			}
		})
		res, doc = op.postForm(fmt.Sprintf("/endpoints/%d/edit", id), form)
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != fmt.Sprintf("/endpoints/%d", id) {
			t.Fatalf("saving the edit form unchanged: %d at %s: %s", res.StatusCode, res.Request.URL, testid(doc, "form-errors").Text())
		}
		if got := storedFilter(t, env, id); got != want {
			t.Fatalf("after an unchanged edit\n%s\nwant\n%s", got, want)
		}

		// Emptying every row and the JSON removes the filter.
		for i := range form["filter_field"] {
			form["filter_field"][i], form["filter_value"][i] = "", ""
		}
		form.Set("filter_json", "")
		res, _ = op.postForm(fmt.Sprintf("/endpoints/%d/edit", id), form)
		if res.StatusCode != http.StatusOK || storedFilter(t, env, id) != "" {
			t.Fatalf("emptied filter: status %d, stored %q", res.StatusCode, storedFilter(t, env, id))
		}
	})

	invalid := []struct {
		name string
		rows [][3]string
		json string
		says string
	}{
		{"value without field", [][3]string{{"", "eq", "x"}}, "", "no field"},
		{"empty list", [][3]string{{"country", "in", " , "}}, "", "list the values"},
		{"missing value", [][3]string{{"status", "eq", ""}}, "", "enter a value"},
		{"repeated operator", [][3]string{{"payout", "gte", "1"}, {"payout", "gte", "2"}}, "", "repeats"},
		{"operator as field", [][3]string{{"$where", "eq", "1"}}, "", "payload path"},
		{"bad JSON", nil, `{"$or": [}`, "not valid JSON"},
		{"bad operator in JSON", nil, `{"payout": {"$regex": "x"}}`, "payout.$regex"},
		{"JSON not an object", nil, `["a"]`, "must be a JSON object"},
		{"number out of range", [][3]string{{"payout", "gt", "1e999"}}, "", "out of range"},
	}
	for _, tc := range invalid {
		t.Run("field error: "+tc.name, func(t *testing.T) {
			before := countRows(t, env.pool, "endpoints")
			for _, htmx := range []bool{false, true} {
				v := withFilterRows(endpointForm(map[string]string{"name": "bad filter"}), tc.rows...)
				v.Set("filter_json", tc.json)
				var res *http.Response
				var msg string
				if htmx {
					r, doc := op.htmx(http.MethodPost, path, v)
					res, msg = r, testid(doc, "filter-error").Text()
				} else {
					r, doc := op.postForm(path, v)
					res, msg = r, testid(doc, "filter-error").Text()
				}
				if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.says) {
					t.Fatalf("htmx=%v: status %d, filter error %q, want %q", htmx, res.StatusCode, msg, tc.says)
				}
			}
			if countRows(t, env.pool, "endpoints") != before {
				t.Fatal("an invalid filter created an endpoint")
			}
		})
	}
}

func TestEndpointFormFilterPreview(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	op := env.signIn(base, "op@example.com", "operator")
	pid := env.createPartner("Acme")
	// 25 conversions (the preview shows the last 20) and one other type.
	for i := range 25 {
		status := "approved"
		if i%2 == 1 {
			status = "rejected"
		}
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved", "payload": map[string]any{"status": status, "payout": i}})
		mustStatus(t, rec, http.StatusAccepted)
	}
	mustStatus(t, env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "signup", "payload": map[string]any{"status": "approved"}}), http.StatusAccepted)

	form := func(rows ...[3]string) url.Values {
		v := withFilterRows(url.Values{"event_types": {"conversion.*"}}, rows...)
		return v
	}
	t.Run("htmx fragment counts matches of the last 20 events of the types", func(t *testing.T) {
		res, doc := op.htmx(http.MethodPost, "/endpoints/filter-preview", form([3]string{"status", "eq", "approved"}, [3]string{"payout", "gte", "10"}))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d", res.StatusCode)
		}
		rows := testid(doc, "filter-preview-event")
		// Events 5..24 are the last 20; approved ones are even: 10..24 → 8 with payout ≥ 10.
		if rows.Length() != 20 || doc.Find(`[data-match="true"]`).Length() != 8 {
			t.Fatalf("%d events, %d matching; want 20 and 8", rows.Length(), doc.Find(`[data-match="true"]`).Length())
		}
		if s := testid(doc, "filter-preview-summary").Text(); !strings.Contains(s, "8 of the last 20") {
			t.Fatalf("summary %q", s)
		}
		if strings.Contains(doc.Text(), "signup") {
			t.Fatal("an event of another type is in the preview")
		}
	})
	t.Run("invalid filter shows its error", func(t *testing.T) {
		v := form()
		v.Set("filter_json", `{"payout": {"$in": 3}}`)
		_, doc := op.htmx(http.MethodPost, "/endpoints/filter-preview", v)
		if s := testid(doc, "filter-preview-error").Text(); !strings.Contains(s, "payout.$in") {
			t.Fatalf("preview error %q", s)
		}
	})
	t.Run("no filter delivers all", func(t *testing.T) {
		_, doc := op.htmx(http.MethodPost, "/endpoints/filter-preview", form())
		if s := testid(doc, "filter-preview-summary").Text(); !strings.Contains(s, "all 20") {
			t.Fatalf("summary %q", s)
		}
	})
	t.Run("without JavaScript the check button re-renders the form and saves nothing", func(t *testing.T) {
		before := countRows(t, env.pool, "endpoints")
		v := withFilterRows(endpointForm(map[string]string{"name": "checked", "event_types": "conversion.approved", "filter_preview": "1"}), [3]string{"status", "eq", "rejected"})
		res, doc := op.postForm(fmt.Sprintf("/partners/%d/endpoints", pid), v)
		if res.StatusCode != http.StatusOK || countRows(t, env.pool, "endpoints") != before {
			t.Fatalf("status %d; endpoints %d → %d", res.StatusCode, before, countRows(t, env.pool, "endpoints"))
		}
		if n := doc.Find(`[data-match="true"]`).Length(); n != 10 {
			t.Fatalf("%d rejected events match, want 10", n)
		}
		if doc.Find(`input[name=filter_field]`).First().AttrOr("value", "") != "status" || testid(doc, "form-errors").Length() != 0 {
			t.Fatal("the form did not come back as typed, without errors")
		}
	})
	t.Run("edit page shows the preview of the stored filter", func(t *testing.T) {
		e := env.createEndpoint(map[string]any{"partner_id": pid, "name": "stored", "kind": "webhook", "url": "https://hooks.acme.invalid/in",
			"event_types": []string{"conversion.approved"}, "filter": map[string]any{"payout": map[string]any{"$lt": 7}}})
		_, doc := op.get(fmt.Sprintf("/endpoints/%d/edit", e.ID))
		// Last 20 are payouts 5..24: 5 and 6 pass.
		if n := doc.Find(`[data-match="true"]`).Length(); n != 2 {
			t.Fatalf("%d events pass $lt 7, want 2", n)
		}
	})
}

// TestFilterFormValues: what the builder shows for a stored operand reads
// back as the same operand.
func TestFilterFormValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typed, json string }{
		{"approved", `"approved"`}, {"12.50", `12.50`}, {"-3", `-3`}, {"007", `"007"`},
		{`"12"`, `"12"`}, {"true", `true`}, {`"true"`, `"true"`}, {"null", `null`},
		{"BR PT", `"BR PT"`}, {`""`, `""`}, {`say "hi"`, `"say \"hi\""`},
	} {
		got := string(formValueJSON(tc.typed))
		if got != tc.json {
			t.Errorf("formValueJSON(%q) = %s, want %s", tc.typed, got, tc.json)
		}
		text, ok := formValueText(json.RawMessage(got))
		if !ok || string(formValueJSON(text)) != got {
			t.Errorf("%s shows as %q, which reads back as %s", got, text, formValueJSON(text))
		}
	}
	if _, ok := formValueText(json.RawMessage(`{"a":1}`)); ok {
		t.Error("an object operand became a row")
	}
}
