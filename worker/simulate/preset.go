package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Shape of the SlowingDown preset.
const (
	SlowStart = 150 * time.Millisecond
	SlowEnd   = 3500 * time.Millisecond
)

// RetryAfter is what RateLimited asks clients to wait after a 429.
const RetryAfter = 5 * time.Second

// Flaky's failure odds: about 5 % of requests fail, most with a 503, the
// rest by hanging until the client times out.
const (
	FlakyUnavailable = 0.03
	FlakyHang        = 0.02
	// flakyHangFor outlasts any sensible endpoint timeout; the wait ends
	// as soon as the client gives up.
	flakyHangFor = 60 * time.Second
)

// trackerMemory bounds how many conversions PostbackTracker remembers for
// duplicate detection; the oldest are forgotten first.
const trackerMemory = 200_000

// Fast answers 200 in 10-60 ms (log-normal around 25 ms): a healthy partner.
func Fast() Behavior {
	return Behavior{
		Name: "fast",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			return clamp(logNormal(rnd, 25*time.Millisecond, 0.35), 10*time.Millisecond, 60*time.Millisecond)
		},
		Respond: respondJSON(http.StatusOK, `{"received":true}`),
	}
}

// SlowingDown always answers 200, but its latency climbs linearly from
// about SlowStart to about SlowEnd over ramp after the server starts, then
// stays there: the partner that is getting slower before it fails. Each
// answer varies by a few percent around the curve. A ramp of zero or less
// starts at SlowEnd.
func SlowingDown(ramp time.Duration) Behavior {
	return Behavior{
		Name: "slowing-down",
		Latency: func(elapsed time.Duration, rnd *rand.Rand) time.Duration {
			base := SlowingCurve(ramp, elapsed)
			return clamp(logNormal(rnd, base, 0.08), base*4/5, base*6/5)
		},
		Respond: respondJSON(http.StatusOK, `{"received":true}`),
	}
}

// SlowingCurve is SlowingDown's typical latency at elapsed.
func SlowingCurve(ramp, elapsed time.Duration) time.Duration {
	if ramp <= 0 || elapsed >= ramp {
		return SlowEnd
	}
	frac := float64(max(elapsed, 0)) / float64(ramp)
	return SlowStart + time.Duration(frac*float64(SlowEnd-SlowStart))
}

// Failing500 answers 500 to everything after 20-80 ms: a partner whose
// service is down behind a working load balancer.
func Failing500() Behavior {
	return Behavior{
		Name: "failing-500",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			return uniform(rnd, 20*time.Millisecond, 80*time.Millisecond)
		},
		Respond: respondJSON(http.StatusInternalServerError,
			`{"error":"internal_error","message":"upstream database unavailable"}`),
	}
}

// Unauthorized answers 401 with a JSON error body to everything: a partner
// that rotated its credentials without telling anyone.
func Unauthorized() Behavior {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("WWW-Authenticate", `Bearer realm="webhooks", error="invalid_token"`)
	return Behavior{
		Name: "unauthorized",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			return uniform(rnd, 8*time.Millisecond, 30*time.Millisecond)
		},
		Respond: func(time.Duration, *rand.Rand, *http.Request) (int, http.Header, string) {
			return http.StatusUnauthorized, h.Clone(),
				`{"error":"invalid_token","message":"The access token is invalid or has been revoked."}`
		},
	}
}

// RateLimited accepts about perSecond requests per second and answers 429
// with "Retry-After: 5" beyond that. Its token bucket refills at perSecond
// and holds what refills during the Retry-After wait (5·perSecond), so a
// client that honours Retry-After gets its next burst accepted. The bucket
// runs on the server's elapsed time, so tests drive it without sleeping.
// It panics unless perSecond is positive and finite.
func RateLimited(perSecond float64) Behavior {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		panic(fmt.Sprintf("simulate: RateLimited(%v): the rate must be positive and finite", perSecond))
	}
	burst := max(1, int(math.Ceil(perSecond*RetryAfter.Seconds())))
	lim := rate.NewLimiter(rate.Limit(perSecond), burst)
	// Any fixed origin works: the limiter only compares times.
	origin := time.Unix(0, 0)
	body := fmt.Sprintf(`{"error":"rate_limited","message":"at most %g requests per second; retry after %d seconds"}`,
		perSecond, int(RetryAfter.Seconds()))
	return Behavior{
		Name: "rate-limited",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			return clamp(logNormal(rnd, 30*time.Millisecond, 0.3), 10*time.Millisecond, 80*time.Millisecond)
		},
		Respond: func(elapsed time.Duration, _ *rand.Rand, _ *http.Request) (int, http.Header, string) {
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			if lim.AllowN(origin.Add(elapsed), 1) {
				return http.StatusOK, h, `{"received":true}`
			}
			h.Set("Retry-After", strconv.Itoa(int(RetryAfter.Seconds())))
			return http.StatusTooManyRequests, h, body
		},
	}
}

// Flaky mostly answers 200 "OK" in 20-400 ms, but about FlakyUnavailable of
// requests get a 503 and about FlakyHang hang until the client gives up:
// the partner whose failures are intermittent, so retries (or a replay)
// get through.
func Flaky() Behavior {
	return Behavior{
		Name: "flaky",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			if rnd.Float64() < FlakyHang {
				return flakyHangFor
			}
			return clamp(logNormal(rnd, 70*time.Millisecond, 0.4), 20*time.Millisecond, 400*time.Millisecond)
		},
		Respond: func(_ time.Duration, rnd *rand.Rand, _ *http.Request) (int, http.Header, string) {
			if rnd.Float64() < FlakyUnavailable {
				return http.StatusServiceUnavailable, nil, "Service Unavailable"
			}
			return http.StatusOK, nil, "OK"
		},
	}
}

// Query parameters PostbackTracker reads, in the spellings of common
// trackers (Voluum cid/txid, Keitaro subid/tid, Binom cnv_id, Affise
// clickid/action_id).
var (
	clickParams       = []string{"cid", "subid", "clickid", "click_id", "cnv_id"}
	transactionParams = []string{"txid", "tid", "transaction_id", "action_id"}
)

// PostbackTracker answers like an affiliate tracker: 200 "OK" for a new
// conversion, 200 "duplicate" for a click id and transaction id it has
// already recorded (a repeated click id counts again only with a new
// transaction id, as in Voluum), and 200 "error: ..." when the click id is
// missing. Trackers answer 200 even when they drop a postback, which is why
// hookline checks the body (success_body_contains "OK"). It reads the
// parameters from the query string or a POST form, in 10-80 ms.
func PostbackTracker() Behavior {
	var (
		mu    sync.Mutex
		seen  = map[string]bool{}
		order []string // FIFO of keys in seen, to forget the oldest
		next  int
	)
	record := func(key string) (fresh bool) {
		mu.Lock()
		defer mu.Unlock()
		if seen[key] {
			return false
		}
		if len(order) < trackerMemory {
			order = append(order, key)
		} else {
			delete(seen, order[next])
			order[next] = key
			next = (next + 1) % trackerMemory
		}
		seen[key] = true
		return true
	}
	text := http.Header{}
	text.Set("Content-Type", "text/plain; charset=utf-8")
	return Behavior{
		Name: "postback-tracker",
		Latency: func(_ time.Duration, rnd *rand.Rand) time.Duration {
			return clamp(logNormal(rnd, 30*time.Millisecond, 0.3), 10*time.Millisecond, 80*time.Millisecond)
		},
		Respond: func(_ time.Duration, _ *rand.Rand, r *http.Request) (int, http.Header, string) {
			if err := r.ParseForm(); err != nil {
				return http.StatusBadRequest, text.Clone(), "error: malformed parameters"
			}
			click, tx := firstParam(r, clickParams), firstParam(r, transactionParams)
			if click == "" {
				return http.StatusOK, text.Clone(), "error: missing click id"
			}
			if !record(click + "\x00" + tx) {
				return http.StatusOK, text.Clone(), "duplicate"
			}
			return http.StatusOK, text.Clone(), "OK"
		},
	}
}

func firstParam(r *http.Request, names []string) string {
	for _, n := range names {
		if v := r.Form.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func respondJSON(status int, body string) func(time.Duration, *rand.Rand, *http.Request) (int, http.Header, string) {
	return func(time.Duration, *rand.Rand, *http.Request) (int, http.Header, string) {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		return status, h, body
	}
}

// logNormal draws around median with the given spread (sigma of the log).
func logNormal(rnd *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*rnd.NormFloat64()))
}

func uniform(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }
