package web

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// DefaultSearchKeys are the top-level payload fields whose values make an
// event findable when HOOKLINE_SEARCH_KEYS does not replace them: the click,
// conversion, transaction and order ids of the tracker presets and of
// commerce events.
func DefaultSearchKeys() []string {
	return []string{"click_id", "clickid", "cid", "subid", "sub_id", "transaction_id", "txid", "tid", "order_id"}
}

// maxSearchValueBytes bounds one stored search value: identifiers are
// short, and a GIN index entry cannot exceed about a third of a page, so a
// longer value (a URL, a blob) is not indexed rather than refusing the event.
const maxSearchValueBytes = 255

// searchKeySet is the configured search keys, prepared for extraction.
type searchKeySet struct {
	names  []string
	quoted [][]byte // `"name"`, for the cheap test whether a payload can have any
}

func newSearchKeySet(names []string) searchKeySet {
	if names == nil {
		names = DefaultSearchKeys()
	}
	ks := searchKeySet{names: names, quoted: make([][]byte, len(names))}
	for i, n := range names {
		ks.quoted[i] = []byte(strconv.Quote(n))
	}
	return ks
}

// extract returns the search keys a compacted payload carries, as parallel
// slices of field names and values (nil, nil when none), in the configured
// order. A value is a top-level string, stored as is, or number, stored as
// written (order_id 1042 is found by "1042"); other types, empty strings and
// values longer than maxSearchValueBytes are not search keys.
func (ks searchKeySet) extract(payload []byte) (names, values []string) {
	// Most payloads are skipped or decoded once, field names only as far
	// as needed: a payload that names none of the keys, quoted, has none
	// (unless it spells a name with \u escapes, decoded below).
	maybe := bytes.Contains(payload, []byte(`\u`))
	for _, q := range ks.quoted {
		if maybe {
			break
		}
		maybe = bytes.Contains(payload, q)
	}
	if !maybe {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return nil, nil
	}
	for _, name := range ks.names {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		v, ok := searchValue(raw)
		if !ok {
			continue
		}
		names = append(names, name)
		values = append(values, v)
	}
	return names, values
}

// searchValue is the text a JSON string or number is searched by.
func searchValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var v string
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		v = string(raw)
	default:
		return "", false
	}
	if v == "" || len(v) > maxSearchValueBytes {
		return "", false
	}
	return v, true
}

// searchKeyMap pairs stored search keys with their values for display. A
// key that occurs twice (it cannot: payload fields are unique) keeps its
// first value.
func searchKeyMap(names, values []string) map[string]string {
	m := make(map[string]string, len(names))
	for i, n := range names {
		if i >= len(values) {
			break
		}
		if _, dup := m[n]; !dup {
			m[n] = values[i]
		}
	}
	return m
}
