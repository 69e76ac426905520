package postback

import (
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"query values", "https://t.example/pb?cid=abc123&payout=12.50&txid=T-1", "https://t.example/pb?cid=***&payout=***&txid=***"},
		{"literal values too", "https://t.example/pb?api_key=s3cret&cid=abc", "https://t.example/pb?api_key=***&cid=***"},
		{"empty value", "https://t.example/pb?a=&b=1", "https://t.example/pb?a=***&b=***"},
		{"bare query item", "https://t.example/pb?abc123", "https://t.example/pb?***"},
		{"empty items kept", "https://t.example/pb?a=1&&b=2&", "https://t.example/pb?a=***&&b=***&"},
		{"value containing equals", "https://t.example/pb?a=b=c", "https://t.example/pb?a=***"},
		{"no query", "https://t.example/pb/static", "https://t.example/pb/static"},
		{"empty query", "https://t.example/pb?", "https://t.example/pb?"},
		{"fragment", "https://t.example/pb?a=1#abc123", "https://t.example/pb?a=***#***"},
		{"empty fragment", "https://t.example/pb#", "https://t.example/pb#"},
		{"question mark inside fragment", "https://t.example/pb#x?y=1", "https://t.example/pb#***"},
		{"user info", "https://user:pass@t.example/pb", "https://***@t.example/pb"},
		{"host and port kept", "https://t.example:8443/pb?a=1", "https://t.example:8443/pb?a=***"},
		{"template path macro", "https://t.example/c/{click_id}/x?p={payout}", "https://t.example/c/***/x?p=***"},
		{"template partial path macro", "https://t.example/c/id-{click_id}.gif", "https://t.example/c/***"},
		{"template query key macro", "https://t.example/pb?{key}=1&a={v}", "https://t.example/pb?***=***&a=***"},
		{"template bare macro", "https://t.example/pb?{click_id}", "https://t.example/pb?***"},
		{"template fragment macro", "https://t.example/pb#{click_id}", "https://t.example/pb#***"},
		{"host only", "https://t.example", "https://t.example"},
		{"trailing slash", "https://t.example/", "https://t.example/"},
		{"not a URL", "not a url?x=1", "not a url?x=***"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTemplateRedactedHidesRenderedValues(t *testing.T) {
	tmpl := mustParse(t, "https://t.example/c/{click_id}?p={payout}&tx={transaction_id}#{status}")
	v := SampleValues("evt_1", time.Unix(1_760_000_000, 0))
	rendered, err := tmpl.Render(v)
	if err != nil {
		t.Fatal(err)
	}
	redacted := tmpl.Redacted()
	if want := "https://t.example/c/***?p=***&tx=***#***"; redacted != want {
		t.Fatalf("Redacted() = %q, want %q", redacted, want)
	}
	for _, secret := range []string{"abc", "12.5", "tx_0001", "sale"} {
		if !strings.Contains(rendered, secret) {
			t.Fatalf("test setup: rendered URL %q lacks %q", rendered, secret)
		}
		if strings.Contains(redacted, secret) {
			t.Errorf("Redacted() leaks %q", secret)
		}
	}

	// A rendered URL alone cannot tell a macro path segment from a literal
	// one, which is why Template.Redacted exists; its query and fragment are
	// still hidden.
	fromRendered := Redact(rendered)
	if want := "https://t.example/c/abc%20123%26x%3D1?p=***&tx=***#***"; fromRendered != want {
		t.Fatalf("Redact(rendered) = %q, want %q", fromRendered, want)
	}
}
