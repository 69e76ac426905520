package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
)

// TestRunSmall runs the whole benchmark on a tiny queue: every phase
// delivers what it must and the report names each figure.
func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	r, err := Run(context.Background(), Options{
		Deliveries: 400, Endpoints: 4, Concurrency: 16, NaiveConcurrency: 4,
		NaiveDuration: 500 * time.Millisecond, DatabaseURL: dbtest.URL(t),
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.Raw.Count != 400 || r.Worker.Count != 400 || r.Naive.Count == 0 || r.Worker.PerSecond() <= 0 {
		t.Fatalf("report %+v", r)
	}
	for _, want := range []string{"raw loopback HTTP", "hookline worker", "naive one-row"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}
