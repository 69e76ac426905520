package sender

import "testing"

// TestClassify is DESIGN §4's table for answers that arrived.
func TestClassify(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		matched    bool
		want       Outcome
		class      string
		retryAfter bool
	}{
		{"200", 200, true, OK, "", false},
		{"204", 204, true, OK, "", false},
		{"299", 299, true, OK, "", false},
		{"2xx without the success text", 200, false, Permanent, ClassBodyMismatch, false},
		{"301 is not followed", 301, true, Permanent, ClassRedirect, false},
		{"304", 304, true, Permanent, ClassRedirect, false},
		{"400", 400, true, Permanent, ClassHTTPStatus, false},
		{"401", 401, true, Permanent, ClassHTTPStatus, false},
		{"404", 404, true, Permanent, ClassHTTPStatus, false},
		{"408 is transient", 408, true, Transient, ClassHTTPStatus, false},
		{"410 is gone", 410, true, Gone, ClassHTTPStatus, false},
		{"425 is transient", 425, true, Transient, ClassHTTPStatus, false},
		{"429 honours Retry-After", 429, true, Transient, ClassHTTPStatus, true},
		{"500", 500, true, Transient, ClassHTTPStatus, false},
		{"502", 502, true, Transient, ClassHTTPStatus, false},
		{"503 honours Retry-After", 503, true, Transient, ClassHTTPStatus, true},
		{"599", 599, true, Transient, ClassHTTPStatus, false},
		{"the body text matters only for 2xx", 500, false, Transient, ClassHTTPStatus, false},
		{"101 outside the registry's meaning", 101, true, Permanent, ClassHTTPStatus, false},
		{"600", 600, true, Permanent, ClassHTTPStatus, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.code, tt.matched)
			want := verdict{outcome: tt.want, class: tt.class, retryAfter: tt.retryAfter}
			if got != want {
				t.Fatalf("classify(%d, %t) = %+v, want %+v", tt.code, tt.matched, got, want)
			}
		})
	}
}
