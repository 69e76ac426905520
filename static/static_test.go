package static_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hookline/hookline/static"
)

var linked = []string{static.Stylesheet, static.HTMX, static.Script, static.Favicon}

func TestPathTargetsExist(t *testing.T) {
	re := regexp.MustCompile(`^/static/([a-z0-9./-]+)\?v=[0-9a-f]{12}$`)
	for _, name := range linked {
		p := static.Path(name)
		m := re.FindStringSubmatch(p)
		if m == nil {
			t.Errorf("Path(%q) = %q, want /static/<name>?v=<hash>", name, p)
			continue
		}
		if _, err := fs.Stat(static.FS(), m[1]); err != nil {
			t.Errorf("Path(%q) points at %q, not in FS: %v", name, m[1], err)
		}
	}
	if got := static.Path("/" + static.Stylesheet); got != static.Path(static.Stylesheet) {
		t.Errorf("a leading slash changes the path: %q", got)
	}
	if got := static.Path("css/missing.css"); got != "/static/css/missing.css" {
		t.Errorf("unknown file: %q", got)
	}
}

func TestHTMXIsVendoredWithItsVersion(t *testing.T) {
	if !strings.Contains(static.HTMX, "htmx-"+static.HTMXVersion+".min.js") {
		t.Errorf("htmx file %q does not carry version %s", static.HTMX, static.HTMXVersion)
	}
	b, err := fs.ReadFile(static.FS(), static.HTMX)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `version:"`+static.HTMXVersion+`"`) {
		t.Errorf("%s does not declare version %s", static.HTMX, static.HTMXVersion)
	}
	versions, err := os.ReadFile("js/VERSIONS")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(versions), "htmx.org@"+static.HTMXVersion) {
		t.Error("js/VERSIONS does not record the htmx source")
	}
	matches, _ := fs.Glob(static.FS(), "js/htmx-*.js")
	if len(matches) != 1 {
		t.Errorf("vendored htmx builds: %v, want exactly one", matches)
	}
}

func TestHooklineScriptSendsCSRFHeader(t *testing.T) {
	b, err := fs.ReadFile(static.FS(), static.Script)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"htmx:configRequest", "X-CSRF-Token", `meta[name="csrf-token"]`, "data-copy"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("hookline.js lacks %q", want)
		}
	}
}

func TestHandler(t *testing.T) {
	h := static.Handler()
	get := func(target string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	t.Run("versioned URL is immutable", func(t *testing.T) {
		rec := get(static.Path(static.Stylesheet))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		if got := rec.Header().Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("Cache-Control = %q", got)
		}
		if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/css") {
			t.Errorf("Content-Type = %q", got)
		}
		if rec.Header().Get("ETag") == "" {
			t.Error("no ETag")
		}
	})

	t.Run("unversioned or stale URL revalidates", func(t *testing.T) {
		for _, target := range []string{"/static/" + static.Script, "/static/" + static.Script + "?v=old"} {
			rec := get(target)
			if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" {
				t.Errorf("%s: %d, Cache-Control %q", target, rec.Code, rec.Header().Get("Cache-Control"))
			}
		}
		etag := get("/static/" + static.Script).Header().Get("ETag")
		if rec := get("/static/"+static.Script, "If-None-Match", etag); rec.Code != http.StatusNotModified {
			t.Errorf("If-None-Match: status %d, want 304", rec.Code)
		}
	})

	t.Run("unknown paths 404", func(t *testing.T) {
		for _, target := range []string{"/static/", "/static/css/", "/static/nope.js", "/static/../static.go", "/elsewhere/css/hookline.css"} {
			if rec := get(target); rec.Code != http.StatusNotFound {
				t.Errorf("%s: status %d, want 404", target, rec.Code)
			}
		}
	})
}
