package simulate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/simulate"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// quick replaces a behavior's latency with a millisecond, so real requests
// stay fast.
func quick(b simulate.Behavior, name string) simulate.Behavior {
	b.Name = name
	b.Latency = func(time.Duration, *rand.Rand) time.Duration { return time.Millisecond }
	return b
}

func start(t *testing.T, behaviors []simulate.Behavior, seed uint64) *simulate.Server {
	t.Helper()
	s, err := simulate.Start(behaviors, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

type answer struct {
	status int
	header http.Header
	body   string
}

func fetch(t *testing.T, method, url, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func TestServerAnswersEachBehaviorOnItsPrefix(t *testing.T) {
	s := start(t, []simulate.Behavior{
		quick(simulate.Fast(), "fast"),
		quick(simulate.SlowingDown(time.Minute), "slow"),
		quick(simulate.Failing500(), "down"),
		quick(simulate.Unauthorized(), "auth"),
		quick(simulate.RateLimited(1), "limited"),
		quick(simulate.Flaky(), "flaky"),
		quick(simulate.PostbackTracker(), "tracker"),
	}, 1)

	tests := []struct {
		name, method, path, body string
		status                   int
		bodyHas                  string
	}{
		{"fast", "POST", "fast/", `{"id":1}`, 200, `"received":true`},
		{"slow", "POST", "slow/hooks/in", `{}`, 200, `"received":true`},
		{"down", "POST", "down/", `{}`, 500, "internal_error"},
		{"auth", "POST", "auth/", `{}`, 401, "invalid_token"},
		{"limited", "POST", "limited/", `{}`, 200, `"received":true`},
		{"flaky", "GET", "flaky/pb?cnv_id=1", "", 0, ""}, // 200 or 503
		{"tracker", "GET", "tracker/postback?cid=a&txid=b", "", 200, "OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := s.URL(tt.name)
			if want := "http://127.0.0.1:"; !strings.HasPrefix(url, want) || !strings.HasSuffix(url, "/"+tt.name+"/") {
				t.Fatalf("URL = %q, want %s<port>/%s/", url, want, tt.name)
			}
			a := fetch(t, tt.method, strings.TrimSuffix(url, tt.name+"/")+tt.path, tt.body)
			if tt.status != 0 && a.status != tt.status {
				t.Errorf("status %d, want %d (body %q)", a.status, tt.status, a.body)
			}
			if !strings.Contains(a.body, tt.bodyHas) {
				t.Errorf("body %q, want it to contain %q", a.body, tt.bodyHas)
			}
			req, fail := s.Stats(tt.name)
			wantFail := int64(0)
			if a.status < 200 || a.status > 299 {
				wantFail = 1
			}
			if req != 1 || fail != wantFail {
				t.Errorf("Stats = %d requests, %d failures; want 1, %d", req, fail, wantFail)
			}
		})
	}

	t.Run("a second request over the rate is refused with Retry-After", func(t *testing.T) {
		a := fetch(t, "POST", s.URL("limited"), `{}`) // the bucket of 5 still has 4
		for i := 0; i < 10 && a.status == 200; i++ {
			a = fetch(t, "POST", s.URL("limited"), `{}`)
		}
		if a.status != 429 || a.header.Get("Retry-After") != "5" {
			t.Errorf("got %d Retry-After %q, want 429 and 5", a.status, a.header.Get("Retry-After"))
		}
	})
	t.Run("the tracker remembers across requests", func(t *testing.T) {
		if a := fetch(t, "GET", s.URL("tracker")+"postback?cid=a&txid=b", ""); a.body != "duplicate" {
			t.Errorf("repeat answered %q, want duplicate", a.body)
		}
	})
	t.Run("unknown names have no URL, no stats and a 404", func(t *testing.T) {
		if u := s.URL("nope"); u != "" {
			t.Errorf("URL(nope) = %q", u)
		}
		if r, f := s.Stats("nope"); r != 0 || f != 0 {
			t.Errorf("Stats(nope) = %d, %d", r, f)
		}
		base := strings.TrimSuffix(s.URL("fast"), "fast/")
		for _, p := range []string{"", "nope/", "fastx/"} {
			if a := fetch(t, "GET", base+p, ""); a.status != 404 {
				t.Errorf("GET /%s: %d, want 404", p, a.status)
			}
		}
	})
}

func TestStartRejectsBadNames(t *testing.T) {
	for _, tt := range []struct {
		name  string
		names []string
	}{
		{"empty", []string{""}},
		{"upper case", []string{"Fast"}},
		{"slash", []string{"a/b"}},
		{"dot dot", []string{".."}},
		{"duplicate", []string{"a", "a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var bs []simulate.Behavior
			for _, n := range tt.names {
				bs = append(bs, simulate.Behavior{Name: n})
			}
			if s, err := simulate.Start(bs, 1); err == nil {
				s.Close()
				t.Errorf("Start(%q) succeeded", tt.names)
			}
		})
	}
}

// A client that gives up ends the simulated wait at once, and counts as a
// failure; Close does not wait for simulated latencies either.
func TestLatencyRespectsCancellation(t *testing.T) {
	hang := simulate.Behavior{
		Name:    "hang",
		Latency: func(time.Duration, *rand.Rand) time.Duration { return time.Hour },
	}
	s, err := simulate.Start([]simulate.Behavior{hang}, 1)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// A POST with a body: the server must notice the hang-up although the
	// handler is waiting, not reading.
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL("hang"), strings.NewReader(`{"a":1}`))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request error %v, want a deadline", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, f := s.Stats("hang"); f == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned request was not counted as a failure: the wait did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Another request left waiting: Close must end it and return promptly.
	go http.Get(s.URL("hang"))
	deadline = time.Now().Add(5 * time.Second)
	for r, _ := s.Stats("hang"); r < 2; r, _ = s.Stats("hang") {
		if time.Now().After(deadline) {
			t.Fatalf("the second request to hang not received within 5 s (%d requests)", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a simulated latency")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// The same seed gives every receiver the same draws, request by request;
// another seed gives others.
func TestDeterministicWithSeed(t *testing.T) {
	draw := simulate.Behavior{
		Name: "draw",
		Respond: func(_ time.Duration, rnd *rand.Rand, _ *http.Request) (int, http.Header, string) {
			return 200, nil, fmt.Sprint(rnd.Uint64())
		},
	}
	other := draw
	other.Name = "other"
	sequence := func(seed uint64, behaviors ...simulate.Behavior) []string {
		s := start(t, behaviors, seed)
		var out []string
		for range 5 {
			out = append(out, fetch(t, "GET", s.URL("draw"), "").body)
		}
		return out
	}
	a := sequence(7, draw)
	if b := sequence(7, other, draw); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("same seed, another receiver beside it: %v then %v", a, b)
	}
	if c := sequence(8, draw); strings.Join(a, ",") == strings.Join(c, ",") {
		t.Errorf("seeds 7 and 8 drew the same: %v", a)
	}
}

// Many clients at once: run with -race.
func TestConcurrentRequests(t *testing.T) {
	s := start(t, []simulate.Behavior{
		quick(simulate.PostbackTracker(), "tracker"),
		quick(simulate.RateLimited(50), "limited"),
		quick(simulate.Flaky(), "flaky"),
	}, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	oks := 0
	for i := range 40 {
		wg.Go(func() {
			for j := range 5 {
				// Every (cid, txid) is sent twice in total: once OK, once duplicate.
				url := fmt.Sprintf("%spb?cid=c%d&txid=t%d", s.URL("tracker"), (i*5+j)%100, (i*5+j)%100)
				resp, err := http.Get(url)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) == "OK" {
					mu.Lock()
					oks++
					mu.Unlock()
				}
				for _, name := range []string{"limited", "flaky"} {
					if resp, err := http.Get(s.URL(name)); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		})
	}
	wg.Wait()
	if oks != 100 {
		t.Errorf("tracker accepted %d of 200 requests for 100 conversions, want exactly 100", oks)
	}
	if r, _ := s.Stats("tracker"); r != 200 {
		t.Errorf("tracker saw %d requests, want 200", r)
	}
}
