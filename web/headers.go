package web

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
)

// Custom header values are often a partner's credentials. They are stored
// sealed (db/secretbox), never shown again after they are saved, and
// never logged: responses and the edit form show maskedValue for each, and
// an edit that sends maskedValue back keeps the stored value.

// maskedHeaders is the stored headers' names, each with maskedValue: header
// values are write-only (they are often the partner's credentials).
func maskedHeaders(stored json.RawMessage) map[string]string {
	names, _ := secretbox.HeaderNames(stored)
	m := make(map[string]string, len(names))
	for _, name := range names {
		m[name] = maskedValue
	}
	return m
}

// maskedHeaderLines is the stored headers as the edit forms' text (the
// dashboard's and the portal's): a "Name: ********" line each, by name.
func maskedHeaderLines(stored json.RawMessage) string {
	names, _ := secretbox.HeaderNames(stored)
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name + ": " + maskedValue + "\n")
	}
	return b.String()
}

// mergeHeaders applies a PATCH's headers to the stored ones: a name given
// (in any letter case) replaces the stored header, others stay. (Deleting
// with null is the caller's: decoded into a map of strings it reads "".)
func mergeHeaders(base, patch map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(patch))
	for name, value := range base {
		out[name] = value
	}
	for name, value := range patch {
		deleteHeader(out, name)
		out[name] = value
	}
	return out
}

// deleteHeader removes a header by name, in any letter case.
func deleteHeader(headers map[string]string, name string) {
	for old := range headers {
		if strings.EqualFold(old, name) {
			delete(headers, old)
		}
	}
}

// unmaskHeaders replaces each maskedValue in headers with the value stored
// under that name (case-insensitively), so an edit can keep a value it
// never saw. A mask for a name with no stored value is left for validation
// to refuse.
func (s *Server) unmaskHeaders(cur db.Endpoint, headers map[string]string) (stored map[string]string, err error) {
	stored, err = s.box.OpenHeaders(cur.ID, cur.Headers)
	if err != nil {
		return nil, err
	}
	for name, value := range headers {
		if value != maskedValue {
			continue
		}
		for storedName, v := range stored {
			if strings.EqualFold(storedName, name) {
				headers[name] = v
			}
		}
	}
	return stored, nil
}
