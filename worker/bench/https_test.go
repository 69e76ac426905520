package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
)

// TestHTTPSSmall runs the HTTPS bench end to end at a tiny size: every
// phase delivers what it must, and the receiver's handshakes show that TLS
// was used (none over HTTP; some with connections kept; one per delivery,
// most of them resumed, when the receiver closes every connection).
func TestHTTPSSmall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := HTTPSOptions{
		Options: Options{Deliveries: 200, Endpoints: 4, Concurrency: 8, NaiveConcurrency: 4, DatabaseURL: dbtest.URL(t)},
		Rate:    40, Duration: time.Second, Warmup: 200 * time.Millisecond, Batch: 2, Ingesters: 2,
	}
	r, err := HTTPS(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, d := range []TLSDrain{r.HTTP, r.HTTPS, r.HTTPSClose} {
		want := 200
		if d.Name == "HTTPS, closed after each" {
			want = 48 // a quarter, in whole events of 4 endpoints
		}
		if d.Worker.Count != want || d.Raw.Count != want || d.WorkerCPU <= 0 || d.RawCPU <= 0 {
			t.Fatalf("%s: %+v", d.Name, d)
		}
	}
	if r.HTTP.AllHandshakes != 0 {
		t.Fatalf("plain HTTP made %d TLS handshakes", r.HTTP.AllHandshakes)
	}
	// Kept connections: a handshake per connection, most of them in the
	// warm-up, far fewer than the deliveries.
	if r.HTTPS.AllHandshakes == 0 || r.HTTPS.Handshakes >= 200 {
		t.Fatalf("HTTPS with connections kept: %d handshakes (%d in the drain of 200 deliveries)", r.HTTPS.AllHandshakes, r.HTTPS.Handshakes)
	}
	// Closed after each answer: a handshake per delivery at least (a
	// kept-alive connection closed under a send is resent on a new one),
	// and the sender resumes its sessions.
	if r.HTTPSClose.Handshakes < 48 || r.HTTPSClose.Resumed < r.HTTPSClose.Handshakes/2 {
		t.Fatalf("HTTPS closed after each: %d handshakes, %d resumed, for 48 deliveries", r.HTTPSClose.Handshakes, r.HTTPSClose.Resumed)
	}
	if r.SteadyHandshakes == 0 || r.SteadyHTTPS.Delivered == 0 || r.SteadyHTTPS.Delivered != r.SteadyHTTPS.Deliveries || r.SteadyHTTP.Delivered == 0 {
		t.Fatalf("steady: HTTP %d of %d delivered, HTTPS %d of %d with %d handshakes",
			r.SteadyHTTP.Delivered, r.SteadyHTTP.Deliveries, r.SteadyHTTPS.Delivered, r.SteadyHTTPS.Deliveries, r.SteadyHandshakes)
	}
	if r.CPURatio <= 0 {
		t.Fatalf("CPU ratio %v", r.CPURatio)
	}
	for _, want := range []string{"HTTPS, connections kept", "HTTPS, closed after each", "TLS handshakes", "HTTPS ÷ over HTTP", "enqueue → 1st attempt at 40 deliveries/s"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}
