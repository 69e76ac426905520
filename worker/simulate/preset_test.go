package simulate_test

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/simulate"
)

const ms = time.Millisecond

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func get(target string) *http.Request { return httptest.NewRequest(http.MethodGet, target, nil) }

// statuses answers n requests at elapsed 0 and counts the status codes.
func statuses(b simulate.Behavior, n int, target string) map[int]int {
	rnd := newRand(1)
	out := map[int]int{}
	for range n {
		code, _, _ := b.Respond(0, rnd, get(target))
		out[code]++
	}
	return out
}

// latencies draws n latencies at elapsed.
func latencies(b simulate.Behavior, n int, elapsed time.Duration) []time.Duration {
	rnd := newRand(2)
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = b.Latency(elapsed, rnd)
	}
	slices.Sort(ds)
	return ds
}

func TestPresetStatusCodes(t *testing.T) {
	tests := []struct {
		name     string
		b        simulate.Behavior
		want     int // the only status answered
		min, max time.Duration
	}{
		{"fast answers 200 in 10-60 ms", simulate.Fast(), 200, 10 * ms, 60 * ms},
		{"failing answers 500 in 20-80 ms", simulate.Failing500(), 500, 20 * ms, 80 * ms},
		{"unauthorized answers 401", simulate.Unauthorized(), 401, 8 * ms, 30 * ms},
		{"slowing down always answers 200", simulate.SlowingDown(time.Minute), 200, 120 * ms, 4200 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statuses(tt.b, 1000, "/x/")
			if len(got) != 1 || got[tt.want] != 1000 {
				t.Errorf("statuses = %v, want only %d", got, tt.want)
			}
			ds := latencies(tt.b, 5000, 30*time.Second)
			if ds[0] < tt.min || ds[len(ds)-1] > tt.max {
				t.Errorf("latency range [%v, %v], want within [%v, %v]", ds[0], ds[len(ds)-1], tt.min, tt.max)
			}
		})
	}

	t.Run("fast is log-normal around 25 ms", func(t *testing.T) {
		ds := latencies(simulate.Fast(), 5000, 0)
		if med := ds[len(ds)/2]; med < 22*ms || med > 28*ms {
			t.Errorf("median %v, want about 25 ms", med)
		}
	})

	t.Run("unauthorized explains itself in JSON", func(t *testing.T) {
		_, h, body := simulate.Unauthorized().Respond(0, newRand(1), get("/x/"))
		var e struct{ Error, Message string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error != "invalid_token" || e.Message == "" {
			t.Errorf("body %q: %+v, %v", body, e, err)
		}
		if h.Get("Content-Type") != "application/json" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("headers %v", h)
		}
	})

	t.Run("flaky fails about 5 percent of the time", func(t *testing.T) {
		const n = 20000
		got := statuses(simulate.Flaky(), n, "/x/")
		if len(got) != 2 || got[200]+got[503] != n {
			t.Fatalf("statuses = %v, want only 200 and 503", got)
		}
		if rate := float64(got[503]) / n; rate < 0.02 || rate > 0.04 {
			t.Errorf("503 rate %.3f, want about %.2f", rate, simulate.FlakyUnavailable)
		}
		ds := latencies(simulate.Flaky(), n, 0)
		hangs := 0
		for _, d := range ds {
			if d >= 30*time.Second {
				hangs++
			}
		}
		if rate := float64(hangs) / n; rate < 0.012 || rate > 0.028 {
			t.Errorf("hang rate %.3f, want about %.2f", rate, simulate.FlakyHang)
		}
		if ok := ds[n-hangs-1]; ok > 400*ms {
			t.Errorf("slowest answered request %v, want at most 400 ms", ok)
		}
	})
}

func TestSlowingDownCurve(t *testing.T) {
	const ramp = 3 * time.Minute
	b := simulate.SlowingDown(ramp)
	tests := []struct {
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 150 * ms},
		{ramp / 4, 987500 * time.Microsecond},
		{ramp / 2, 1825 * ms},
		{ramp, 3500 * ms},
		{10 * ramp, 3500 * ms},
		{-time.Second, 150 * ms}, // a clock before the start is the start
	}
	prev := time.Duration(0)
	for _, tt := range tests {
		if got := simulate.SlowingCurve(ramp, tt.elapsed); got != tt.want {
			t.Errorf("SlowingCurve(%v) = %v, want %v", tt.elapsed, got, tt.want)
		}
		ds := latencies(b, 2001, tt.elapsed)
		med := ds[len(ds)/2]
		if float64(med) < 0.97*float64(tt.want) || float64(med) > 1.03*float64(tt.want) {
			t.Errorf("median latency at %v = %v, want %v ± 3 %%", tt.elapsed, med, tt.want)
		}
		if ds[0] < tt.want*4/5 || ds[len(ds)-1] > tt.want*6/5 {
			t.Errorf("latency at %v spans [%v, %v], want within ±20 %% of %v", tt.elapsed, ds[0], ds[len(ds)-1], tt.want)
		}
		if tt.elapsed >= 0 && med < prev {
			t.Errorf("median at %v = %v fell below %v: the curve must not go down", tt.elapsed, med, prev)
		}
		prev = med
	}
	if got := simulate.SlowingCurve(0, 0); got != simulate.SlowEnd {
		t.Errorf("SlowingCurve without a ramp = %v, want %v", got, simulate.SlowEnd)
	}
}

func TestRateLimited(t *testing.T) {
	b := simulate.RateLimited(4) // bucket of 20, refilled at 4/s
	answer := func(at time.Duration) (int, http.Header) {
		code, h, _ := b.Respond(at, nil, get("/x/"))
		return code, h
	}
	count := func(at time.Duration, n int) (ok int) {
		for range n {
			if code, _ := answer(at); code == 200 {
				ok++
			}
		}
		return ok
	}

	t.Run("a full bucket accepts five seconds' worth at once", func(t *testing.T) {
		if ok := count(0, 30); ok != 20 {
			t.Errorf("accepted %d of 30 at once, want 20", ok)
		}
	})
	t.Run("beyond that it answers 429 with Retry-After 5", func(t *testing.T) {
		code, h := answer(0)
		if code != http.StatusTooManyRequests || h.Get("Retry-After") != "5" {
			t.Errorf("got %d, Retry-After %q; want 429 and 5", code, h.Get("Retry-After"))
		}
	})
	t.Run("it refills at the rate", func(t *testing.T) {
		if ok := count(time.Second, 10); ok != 4 {
			t.Errorf("accepted %d one second later, want 4", ok)
		}
		if ok := count(1500*ms, 10); ok != 2 {
			t.Errorf("accepted %d half a second after that, want 2", ok)
		}
	})
	t.Run("a client that waits Retry-After gets a full burst", func(t *testing.T) {
		if ok := count(1500*ms+simulate.RetryAfter, 30); ok != 20 {
			t.Errorf("accepted %d after waiting, want 20", ok)
		}
	})
	t.Run("a steady client under the rate is never refused", func(t *testing.T) {
		b := simulate.RateLimited(3)
		for i := range 600 {
			at := time.Duration(i) * 400 * ms // 2.5 per second
			if code, _, _ := b.Respond(at, nil, get("/x/")); code != 200 {
				t.Fatalf("request %d at %v refused with %d", i, at, code)
			}
		}
	})
	t.Run("a non-positive rate is a programming error", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("RateLimited(0) did not panic")
			}
		}()
		simulate.RateLimited(0)
	})
}

func TestPostbackTracker(t *testing.T) {
	b := simulate.PostbackTracker()
	body := func(target string) string {
		code, h, body := b.Respond(0, nil, get(target))
		if code != 200 || h.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: status %d, content type %q; trackers answer 200 text", target, code, h.Get("Content-Type"))
		}
		return body
	}
	steps := []struct {
		name, target, want string
	}{
		{"a new conversion", "/t/postback?cid=c1&txid=t1&payout=12.50", "OK"},
		{"the same click and transaction again", "/t/postback?cid=c1&txid=t1&payout=12.50", "duplicate"},
		{"the same click with a new transaction", "/t/postback?cid=c1&txid=t2", "OK"},
		{"Keitaro spelling", "/t/KEY/postback?subid=k1&tid=t9&status=sale&return=OK", "OK"},
		{"Keitaro spelling repeated", "/t/KEY/postback?subid=k1&tid=t9&status=lead", "duplicate"},
		{"a click without transaction id", "/t/pb?clickid=z", "OK"},
		{"that click again", "/t/pb?clickid=z", "duplicate"},
		{"no click id", "/t/pb?payout=1", "error: missing click id"},
	}
	for _, s := range steps {
		if got := body(s.target); got != s.want {
			t.Errorf("%s: answered %q, want %q", s.name, got, s.want)
		}
	}

	t.Run("reads POST forms too", func(t *testing.T) {
		b := simulate.PostbackTracker()
		post := func() string {
			r := httptest.NewRequest(http.MethodPost, "/t/pb", stringsReader("cid=p1&txid=x"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			_, _, body := b.Respond(0, nil, r)
			return body
		}
		if a, b := post(), post(); a != "OK" || b != "duplicate" {
			t.Errorf("answers %q, %q; want OK, duplicate", a, b)
		}
	})
}
