package layout_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/hookline/hookline/static"
	"github.com/hookline/hookline/views/layout"
)

func renderPage(t *testing.T, m layout.PageMeta) (*goquery.Document, string) {
	t.Helper()
	ctx := templ.WithChildren(context.Background(), templ.Raw(`<p data-testid="content">hello</p>`))
	var buf bytes.Buffer
	if err := layout.Page(m).Render(ctx, &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	return doc, html
}

func meta(role string) layout.PageMeta {
	return layout.PageMeta{
		Title:     "Endpoints",
		Nav:       layout.NavEndpoints,
		User:      &layout.User{Email: "ops@example.com", Role: role},
		CSRFToken: "csrf-abc",
		Version:   "v0.1.0",
	}
}

func TestPageHead(t *testing.T) {
	doc, html := renderPage(t, meta(layout.RoleOperator))
	if !strings.HasPrefix(strings.ToLower(html), "<!doctype html>") {
		t.Errorf("page starts with %q", html[:20])
	}
	if got := doc.Find("html").AttrOr("lang", ""); got != "en" {
		t.Errorf("lang = %q", got)
	}
	if got := doc.Find("title").Text(); got != "Endpoints · hookline" {
		t.Errorf("title = %q", got)
	}
	if got := doc.Find(`meta[name="csrf-token"]`).AttrOr("content", ""); got != "csrf-abc" {
		t.Errorf("csrf meta = %q", got)
	}
	if doc.Find(`meta[name="viewport"]`).Length() != 1 {
		t.Error("no viewport meta")
	}
	if got := doc.Find(`link[rel="stylesheet"]`).AttrOr("href", ""); got != static.Path(static.Stylesheet) {
		t.Errorf("stylesheet = %q", got)
	}
	scripts := doc.Find("script[src]")
	if scripts.Length() != 2 {
		t.Fatalf("%d scripts, want htmx and hookline.js", scripts.Length())
	}
	for i, want := range []string{static.Path(static.HTMX), static.Path(static.Script)} {
		s := scripts.Eq(i)
		if s.AttrOr("src", "") != want {
			t.Errorf("script %d = %q, want %q", i, s.AttrOr("src", ""), want)
		}
		if _, ok := s.Attr("defer"); !ok {
			t.Errorf("script %d is not deferred", i)
		}
	}
	if !strings.Contains(static.Path(static.HTMX), "htmx-2.0.") {
		t.Errorf("htmx path %q does not carry its version", static.Path(static.HTMX))
	}
	cfg := doc.Find(`meta[name="htmx-config"]`).AttrOr("content", "")
	if !strings.Contains(cfg, `"includeIndicatorStyles":false`) || !strings.Contains(cfg, `"code":"422","swap":true`) {
		t.Errorf("htmx-config = %q", cfg)
	}
}

func TestPageNavigation(t *testing.T) {
	t.Run("active link has aria-current", func(t *testing.T) {
		doc, _ := renderPage(t, meta(layout.RoleViewer))
		current := doc.Find(`nav[data-testid="nav"] a[aria-current="page"]`)
		if current.Length() != 1 || current.Text() != "Endpoints" || current.AttrOr("href", "") != "/endpoints" {
			t.Errorf("current link: %d, %q", current.Length(), current.Text())
		}
	})

	t.Run("settings only for admins", func(t *testing.T) {
		for role, want := range map[string]int{layout.RoleViewer: 0, layout.RoleOperator: 0, layout.RoleAdmin: 1} {
			doc, _ := renderPage(t, meta(role))
			if got := doc.Find(`nav a[href="/settings/api-keys"]`).Length(); got != want {
				t.Errorf("%s sees %d settings links, want %d", role, got, want)
			}
			if got := doc.Find("nav a").Length(); got != 7+want { // with Conversions
				t.Errorf("%s sees %d nav links", role, got)
			}
		}
	})

	t.Run("user and logout", func(t *testing.T) {
		doc, _ := renderPage(t, meta(layout.RoleAdmin))
		user := doc.Find(`[data-testid="user"]`)
		if !strings.Contains(user.Text(), "ops@example.com") || user.Find(`[data-testid="user-role"]`).Text() != "admin" {
			t.Errorf("user = %q", user.Text())
		}
		form := doc.Find(`form[data-testid="logout-form"]`)
		if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/logout" {
			t.Errorf("logout form method=%q action=%q", form.AttrOr("method", ""), form.AttrOr("action", ""))
		}
		if got := form.Find(`input[type="hidden"][name="csrf_token"]`).AttrOr("value", ""); got != "csrf-abc" {
			t.Errorf("logout csrf token = %q", got)
		}
		if form.Find(`button[type="submit"]`).Length() != 1 {
			t.Error("no logout button")
		}
	})

	t.Run("no user: no nav, no logout", func(t *testing.T) {
		doc, _ := renderPage(t, layout.PageMeta{Title: "Sign in"})
		for _, sel := range []string{"nav", `[data-testid="user"]`, `form[action="/logout"]`, `meta[name="csrf-token"]`} {
			if doc.Find(sel).Length() != 0 {
				t.Errorf("%s rendered without a user", sel)
			}
		}
		if !doc.Find("body").HasClass("signed-out") {
			t.Error("body lacks signed-out")
		}
		if doc.Find(`[data-testid="content"]`).Length() != 1 {
			t.Error("children missing")
		}
	})
}

func TestPageBody(t *testing.T) {
	m := meta(layout.RoleViewer)
	m.Flashes = []layout.Flash{{Kind: layout.FlashSuccess, Message: "Saved."}, {Kind: "weird", Message: "<b>x</b>"}}
	doc, html := renderPage(t, m)

	skip := doc.Find("a.skip-link")
	if skip.AttrOr("href", "") != "#main" || doc.Find("main#main").Length() != 1 {
		t.Error("skip link must point at main#main")
	}
	if doc.Find(`main [data-testid="content"]`).Length() != 1 {
		t.Error("children are not inside main")
	}
	area := doc.Find("#flashes")
	if area.AttrOr("role", "") != "status" {
		t.Errorf("flash area role = %q", area.AttrOr("role", ""))
	}
	flashes := area.Find(`[data-testid="flash"]`)
	if flashes.Length() != 2 || !flashes.First().HasClass("flash-success") || !flashes.Last().HasClass("flash-info") {
		t.Error("flashes and their classes")
	}
	if strings.Contains(html, "<b>x</b>") {
		t.Error("flash message not escaped")
	}
	if got := doc.Find(`footer[data-testid="footer"]`).Text(); got != "hookline v0.1.0" {
		t.Errorf("footer = %q", got)
	}
}

func TestFlashesOOB(t *testing.T) {
	var buf bytes.Buffer
	if err := layout.FlashesOOB([]layout.Flash{{Kind: layout.FlashError, Message: "Nope"}}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, _ := goquery.NewDocumentFromReader(&buf)
	area := doc.Find("#" + layout.FlashesID)
	if area.AttrOr("hx-swap-oob", "") != "true" || area.Find(".flash-error").Text() != "Nope" {
		t.Error("out-of-band flashes")
	}
}

func TestErrorPage(t *testing.T) {
	render := func(m layout.PageMeta, status int, msg string) *goquery.Document {
		var buf bytes.Buffer
		if err := layout.ErrorPage(m, status, msg).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		doc, _ := goquery.NewDocumentFromReader(&buf)
		return doc
	}

	t.Run("without a user", func(t *testing.T) {
		doc := render(layout.PageMeta{}, 404, "")
		page := doc.Find(`[data-testid="error-page"]`)
		if page.AttrOr("data-status", "") != "404" || page.Find("h1").Text() != "Page not found" {
			t.Errorf("error page: %q", page.Text())
		}
		if doc.Find("title").Text() != "404 · Page not found · hookline" {
			t.Errorf("title = %q", doc.Find("title").Text())
		}
		if got := page.Find(`[data-testid="error-message"]`).Text(); got != layout.StatusMessage(404) {
			t.Errorf("message = %q", got)
		}
		if page.Find(`a[href="/"]`).Length() != 1 {
			t.Error("no way back to the overview")
		}
		if doc.Find("nav").Length() != 0 {
			t.Error("nav without a user")
		}
	})

	t.Run("with a user and a message", func(t *testing.T) {
		doc := render(meta(layout.RoleOperator), 409, "The endpoint was <changed>.")
		if got := doc.Find(`[data-testid="error-message"]`).Text(); got != "The endpoint was <changed>." {
			t.Errorf("message = %q", got)
		}
		if doc.Find("nav a").Length() == 0 {
			t.Error("signed-in error page keeps the navigation")
		}
		if doc.Find("title").Text() != "409 · Conflict · hookline" {
			t.Errorf("the error's title replaces the page's: %q", doc.Find("title").Text())
		}
	})

	t.Run("server errors stay vague", func(t *testing.T) {
		for _, s := range []int{500, 502, 503} {
			msg := layout.StatusMessage(s)
			if msg == "" || strings.Contains(strings.ToLower(msg), "panic") || strings.Contains(msg, "goroutine") {
				t.Errorf("StatusMessage(%d) = %q", s, msg)
			}
		}
	})
}

func TestUserRoles(t *testing.T) {
	var none *layout.User
	if none.CanOperate() || none.IsAdmin() {
		t.Error("nil user has no rights")
	}
	v := &layout.User{Role: layout.RoleViewer}
	o := &layout.User{Role: layout.RoleOperator}
	a := &layout.User{Role: layout.RoleAdmin}
	if v.CanOperate() || !o.CanOperate() || !a.CanOperate() || o.IsAdmin() || !a.IsAdmin() {
		t.Error("role checks")
	}
	if layout.NavItems(nil) != nil {
		t.Error("no nav without a user")
	}
}
