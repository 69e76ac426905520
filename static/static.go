// Package static owns the dashboard's embedded assets: the stylesheet, the
// vendored htmx build, hookline's small progressive-enhancement script and the
// favicon. It hands out cache-busted URLs for them and serves them with long
// cache lifetimes, so a deploy that changes a file changes its URL.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"sync"
)

//go:embed css/*.css js/*.js img/*
var files embed.FS

// Prefix is where the web server mounts Handler.
const Prefix = "/static/"

// HTMXVersion is the vendored htmx release; js/VERSIONS records its source.
const HTMXVersion = "2.0.11"

// Names of the assets that the layout links. Pass them to Path.
const (
	Stylesheet = "css/hookline.css"
	HTMX       = "js/htmx-" + HTMXVersion + ".min.js"
	Script     = "js/hookline.js"
	Favicon    = "img/favicon.svg"
)

// FS returns the embedded assets, rooted so that Stylesheet etc. are valid
// names in it.
func FS() fs.FS { return files }

// hashes maps each embedded file name to a short content hash. It is computed
// once, on first use, and never changes afterwards: the embedded files are
// part of the binary.
var hashes = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[name] = hex.EncodeToString(sum[:])[:12]
		return nil
	})
	return m
})

// Path returns the URL of the embedded file name (e.g. Stylesheet) with a
// content hash as its query, e.g. "/static/css/hookline.css?v=3f2a9c0b1d4e".
// The hash changes whenever the file does, so browsers may cache the URL
// forever. A name that is not embedded gets a plain URL, which 404s; the
// package test checks the names the layout uses.
func Path(name string) string {
	name = strings.TrimPrefix(name, "/")
	if h, ok := hashes()[name]; ok {
		return Prefix + name + "?v=" + h
	}
	return Prefix + name
}

// Handler serves the embedded files for requests under Prefix. A request that
// carries the current content hash (a URL from Path) may be cached for a year
// as immutable; any other request must be revalidated, so a stale or
// hand-written URL never pins an old file. Mount it as is, without stripping
// the prefix, e.g. e.GET("/static/*", echo.WrapHandler(static.Handler())).
func Handler() http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			http.NotFound(w, r)
			return
		}
		h, known := hashes()[name]
		if !known {
			http.NotFound(w, r)
			return
		}
		if v := r.URL.Query().Get("v"); v == h {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("ETag", `"`+h+`"`)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		r2.URL.RawPath = ""
		fileServer.ServeHTTP(w, r2)
	})
}
