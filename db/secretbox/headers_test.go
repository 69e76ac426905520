package secretbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestHeadersSealedAtRest(t *testing.T) {
	b, err := New(bytes.Repeat([]byte{7}, KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]string{"Authorization": "Bearer partner-token-123", "X-Account": "42", "X-Empty": ""}
	stored, err := b.SealHeaders(9, plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), "partner-token-123") || strings.Contains(string(stored), `"42"`) {
		t.Fatalf("plain text in the stored form: %s", stored)
	}
	if names, _ := HeaderNames(stored); !slices.Equal(sorted(names), []string{"Authorization", "X-Account", "X-Empty"}) {
		t.Fatalf("names = %v", names)
	}
	if p, _ := Plaintext(stored); p {
		t.Fatal("sealed headers reported as plain text")
	}
	got, err := b.OpenHeaders(9, stored)
	if err != nil || !maps.Equal(got, plain) {
		t.Fatalf("OpenHeaders = %v, %v", got, err)
	}

	// Another endpoint's row, or a value moved to another header name,
	// does not decrypt.
	if _, err := b.OpenHeaders(10, stored); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("other endpoint: %v", err)
	}
	var m map[string]string
	_ = json.Unmarshal(stored, &m)
	m["X-Account"] = m["Authorization"]
	moved, _ := json.Marshal(m)
	if _, err := b.OpenHeaders(9, moved); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("moved value: %v", err)
	}
	// Header names are case-insensitive: the binding uses the canonical form.
	m = map[string]string{}
	_ = json.Unmarshal(stored, &m)
	lower := map[string]string{"authorization": m["Authorization"]}
	raw, _ := json.Marshal(lower)
	if got, err := b.OpenHeaders(9, raw); err != nil || got["authorization"] != "Bearer partner-token-123" {
		t.Fatalf("case-insensitive name: %v %v", got, err)
	}

	// Values stored before sealing pass through and are reported.
	legacy := json.RawMessage(`{"X-Old":"plain"}`)
	if p, _ := Plaintext(legacy); !p {
		t.Fatal("legacy plain text not reported")
	}
	if got, err := b.OpenHeaders(9, legacy); err != nil || got["X-Old"] != "plain" {
		t.Fatalf("legacy: %v %v", got, err)
	}
	if got, err := b.OpenHeaders(9, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }
