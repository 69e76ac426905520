package bench

import (
	"crypto/rand"
	"log/slog"
	"net/netip"
	"time"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/ssrf"
)

// setDefault sets *v to d when it is not positive: every option of the
// bench takes 0 for its default.
func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// loadDefaults are the drain's and the steady rate's defaults for what
// both options have: 100 endpoints, 256 sends in flight, payloads of 512 B,
// no log.
func loadDefaults(endpoints, concurrency, payloadBytes *int, log **slog.Logger) {
	setDefault(endpoints, 100)
	setDefault(concurrency, 256)
	setDefault(payloadBytes, 512)
	if *log == nil {
		*log = slog.New(slog.DiscardHandler)
	}
}

// trafficDefaults are the receiver mix's and the outage's defaults for
// their traffic: 2,000 events/s over 1,000 endpoints in batches of 10 from
// 8 ingesters, 256 sends in flight, a sample a minute, no log.
func trafficDefaults(endpoints, rate, batch, ingesters, concurrency *int, every *time.Duration, log **slog.Logger) {
	setDefault(endpoints, 1000)
	setDefault(rate, 2000)
	setDefault(batch, 10)
	setDefault(ingesters, 8)
	setDefault(concurrency, 256)
	setDefault(every, time.Minute)
	if *log == nil {
		*log = slog.New(slog.DiscardHandler)
	}
}

// defaults of the mix's and the outage's endpoints: 8 in flight, a 10 s
// timeout, 10 attempts, a breaker opened by 10 failures.
func (s *mixSettings) defaults() {
	setDefault(&s.MaxInFlight, 8)
	setDefault(&s.Timeout, 10*time.Second)
	setDefault(&s.MaxAttempts, 10)
	setDefault(&s.FailureThreshold, 10)
}

// loopbackGuard lets the worker and the raw sender reach the bench's
// receivers, which listen on loopback, and nothing else.
func loopbackGuard() *ssrf.Guard {
	return ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

// newRunKey makes the secret key of a run and the box that seals the
// endpoints' secrets with it, as hookline serve's HOOKLINE_SECRET_KEY does.
func newRunKey() ([]byte, *secretbox.Box) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key, nil) // a 32-byte key is always accepted
	return key, box
}
