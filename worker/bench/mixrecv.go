package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/worker/simulate"
)

// The receiver classes of the mix: what partners do.
const (
	classFast    = "fast"         // answers 200 around a median under 100 ms
	classSlow    = "slow"         // answers 200 around a median of 100-500 ms
	classHanging = "hanging"      // answers nothing until the client gives up
	classFailing = "failing"      // answers 503 in bursts, 200 between them
	classDown    = "down"         // refuses connections for the whole run
	classLimited = "rate-limited" // answers 429 with Retry-After beyond its rate
	classOutage  = "outage"       // healthy, but refuses connections while down
)

// mixClasses in report order.
var mixClasses = []string{classFast, classSlow, classHanging, classFailing, classDown, classLimited, classOutage}

// Answer-time shape of a healthy endpoint: log-normal around a median drawn
// log-uniformly from medianLow to medianHigh per endpoint, with a tail
// (sigma 0.7: p99 ≈ 5 × the median) cut at tailCap, under the timeout.
const (
	medianLow  = 10 * time.Millisecond
	medianHigh = 500 * time.Millisecond
	fastBelow  = 100 * time.Millisecond
	tailSigma  = 0.7
	tailCap    = 8 * time.Second
	// limitedGrace is how long after a 429 a request may still arrive
	// without ignoring its Retry-After: sends the worker began before the
	// answer was recorded.
	limitedGrace = 500 * time.Millisecond
)

// mixEndpoint is one simulated partner, on a loopback address of its own
// (127.0.x.y): each is a host of its own to the sender, as partners are,
// so no pool of connections per host is shared between them.
type mixEndpoint struct {
	name, class string
	median      time.Duration
	addr        string // host:port, kept across an outage
	burstPhase  time.Duration
	limited     simulate.Behavior

	inFlight, maxInFlight atomic.Int64
	requests, ok          atomic.Int64
	tooMany, early        atomic.Int64 // 429s sent; requests inside a Retry-After
	sent2xx               atomic.Int64 // as ok, read per second by the outage curve

	mu        sync.Mutex
	srv       *http.Server
	last429   time.Time
	pauseTill time.Time
}

// mixReceiver is the receiver mix: one server per endpoint.
type mixReceiver struct {
	eps     []*mixEndpoint
	start   time.Time
	timeout time.Duration
	tail    time.Duration // the longest healthy answer: tailCap, under the timeout
	// bursts of the failing class: burstFor of 503s every burstEvery.
	burstEvery, burstFor time.Duration
	ctx                  context.Context
	cancel               context.CancelFunc
}

// loopbackHost is the i-th endpoint's own loopback address.
func loopbackHost(i int) string { return fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250) }

// startMixReceiver starts one server per class entry (classes[i] is endpoint
// i's); down endpoints get an address nobody listens on.
func startMixReceiver(classes []string, rnd *rand.Rand, timeout, burstEvery, burstFor time.Duration, limitPerSecond float64) (*mixReceiver, error) {
	m := &mixReceiver{start: time.Now(), timeout: timeout, tail: min(tailCap, timeout*4/5), burstEvery: burstEvery, burstFor: burstFor}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for i, c := range classes {
		e := &mixEndpoint{name: fmt.Sprintf("%s-%d", c, i), class: c}
		e.median = time.Duration(float64(medianLow) * math.Pow(float64(medianHigh)/float64(medianLow), rnd.Float64()))
		e.burstPhase = time.Duration(rnd.Int64N(int64(burstEvery)))
		if c == classLimited {
			e.limited = simulate.RateLimited(limitPerSecond)
		}
		m.eps = append(m.eps, e)
		ln, err := net.Listen("tcp", loopbackHost(i)+":0")
		if err != nil {
			m.close()
			return nil, fmt.Errorf("listen on %s (every endpoint has a loopback address of its own): %w", loopbackHost(i), err)
		}
		e.addr = ln.Addr().String()
		if c == classDown {
			_ = ln.Close() // connection refused, for the whole run
			continue
		}
		m.serve(e, ln)
	}
	return m, nil
}

// healthyClass is the class a healthy endpoint of this median reports under.
func healthyClass(median time.Duration) string {
	if median < fastBelow {
		return classFast
	}
	return classSlow
}

func (m *mixReceiver) url(e *mixEndpoint) string { return "http://" + e.addr + "/" + e.name }

func (m *mixReceiver) serve(e *mixEndpoint, ln net.Listener) {
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.answer(e, w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return m.ctx },
	}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// down closes the endpoint's listener and connections: from now on its
// address refuses connections.
func (m *mixReceiver) down(e *mixEndpoint) {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// up listens again on the endpoint's address.
func (m *mixReceiver) up(e *mixEndpoint) error {
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		return err
	}
	m.serve(e, ln)
	return nil
}

func (m *mixReceiver) close() {
	m.cancel()
	for _, e := range m.eps {
		m.down(e)
	}
}

// healthyDelay draws one answer time around the endpoint's median.
func (m *mixReceiver) healthyDelay(median time.Duration) time.Duration {
	d := time.Duration(float64(median) * math.Exp(tailSigma*rand.NormFloat64()))
	return min(max(d, time.Millisecond), m.tail)
}

func (m *mixReceiver) answer(e *mixEndpoint, w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	n := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for {
		top := e.maxInFlight.Load()
		if n <= top || e.maxInFlight.CompareAndSwap(top, n) {
			break
		}
	}
	e.requests.Add(1)
	// The body first: net/http notices a client that hangs up only once
	// it is read.
	_, _ = io.Copy(io.Discard, r.Body)
	status := http.StatusOK
	var delay time.Duration
	switch e.class {
	case classHanging:
		delay = 2 * m.timeout // the client gives up first
		status = http.StatusGatewayTimeout
	case classFailing:
		delay = m.healthyDelay(e.median)
		if (now.Sub(m.start)+e.burstPhase)%m.burstEvery < m.burstFor {
			delay, status = 20*time.Millisecond, http.StatusServiceUnavailable
		}
	case classLimited:
		e.mu.Lock()
		if now.After(e.last429.Add(limitedGrace)) && now.Before(e.pauseTill) {
			e.early.Add(1)
		}
		e.mu.Unlock()
		delay = e.limited.Latency(now.Sub(m.start), rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	default:
		delay = m.healthyDelay(e.median)
	}
	t := time.NewTimer(delay)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	if e.class == classLimited {
		var h http.Header
		status, h, _ = e.limited.Respond(time.Since(m.start), rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), r)
		if status == http.StatusTooManyRequests {
			at := time.Now()
			e.tooMany.Add(1)
			e.mu.Lock()
			e.last429, e.pauseTill = at, at.Add(simulate.RetryAfter)
			e.mu.Unlock()
		}
		for k, v := range h {
			w.Header()[k] = v
		}
	}
	if status/100 == 2 {
		e.ok.Add(1)
		e.sent2xx.Add(1)
	}
	w.WriteHeader(status)
}
