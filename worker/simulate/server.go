// Package simulate runs simulated partner receivers on loopback: webhook
// and postback endpoints that answer fast, slow down over time, fail with
// 500s, refuse credentials, rate-limit or behave like an affiliate tracker
// that answers "duplicate". `hookline demo` points its sample endpoints at
// them, so the dashboard shows every failure mode without a real partner.
//
// A Behavior is two pure functions of the time since the server started and
// a random source, so each preset can be tested by feeding it times directly.
// A Server runs many behaviors on one 127.0.0.1 listener, one path prefix
// each. Randomness is deterministic for a given seed (math/rand/v2 PCG): the
// n-th request a receiver gets always draws the same numbers.
package simulate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Behavior is how one simulated receiver answers.
type Behavior struct {
	// Name is the receiver's path prefix, "/<Name>/": lower-case letters,
	// digits, "-", "_" and ".".
	Name string
	// Latency is how long the receiver takes before answering; elapsed is
	// the time since the server started. The wait ends early when the
	// client gives up (its request context is cancelled), and then Respond
	// is not called. Nil means no delay.
	Latency func(elapsed time.Duration, rnd *rand.Rand) time.Duration
	// Respond decides the answer once the latency has passed; elapsed is
	// the time since the server started, at the moment of answering. It
	// must be safe for concurrent use. Nil answers 200 with an empty body.
	Respond func(elapsed time.Duration, rnd *rand.Rand, r *http.Request) (status int, header http.Header, body string)
}

// Server runs behaviors on one loopback listener, each under its own path
// prefix, so one port serves many simulated partners.
type Server struct {
	srv    *http.Server
	base   string // http://127.0.0.1:port
	start  time.Time
	routes map[string]*route

	// ctx is every request's base context; Close cancels it, so a request
	// waiting out a simulated latency returns at once.
	ctx    context.Context
	cancel context.CancelFunc

	handlers  sync.WaitGroup // requests being answered
	served    chan struct{}  // closed when Serve has returned
	serveErr  error          // why Serve stopped, if not Close; read after served
	closeOnce sync.Once
	closeErr  error
}

// route is one running behavior with its random source and counters.
type route struct {
	b Behavior

	// mu guards rnd, which is not safe for concurrent use. Each request
	// takes its own child source under the lock and draws from that
	// unlocked, so slow behaviors never hold the lock.
	mu  sync.Mutex
	rnd *rand.Rand

	requests atomic.Int64
	failures atomic.Int64
}

// maxBodyBytes bounds what a receiver reads of a request body.
const maxBodyBytes = 1 << 20

// Start listens on 127.0.0.1 (a free port) and serves the behaviors until
// Close. Names must be valid and unique. The seed makes the random draws
// reproducible; each behavior's sequence depends only on the seed and its
// name, so adding a receiver does not change the others.
func Start(behaviors []Behavior, seed uint64) (*Server, error) {
	routes := make(map[string]*route, len(behaviors))
	for _, b := range behaviors {
		if !validName(b.Name) {
			return nil, fmt.Errorf("simulate: receiver name %q: use 1-64 lower-case letters, digits, '-', '_' or '.'", b.Name)
		}
		if routes[b.Name] != nil {
			return nil, fmt.Errorf("simulate: two receivers are named %q", b.Name)
		}
		routes[b.Name] = &route{b: b, rnd: rand.New(rand.NewPCG(seed, nameHash(b.Name)))}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("simulate: listen on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		base:   "http://" + ln.Addr().String(),
		start:  time.Now(),
		routes: routes,
		ctx:    ctx,
		cancel: cancel,
		served: make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	return s, nil
}

// URL returns the base URL of the named receiver, "http://127.0.0.1:port/<name>/",
// or "" when no receiver has that name. Any path below it reaches the
// receiver, so postback templates may add their own path and query.
func (s *Server) URL(name string) string {
	if s.routes[name] == nil {
		return ""
	}
	return s.base + "/" + name + "/"
}

// Stats returns how many requests the named receiver got and how many of
// them failed: answered with a status outside 2xx, or abandoned by the
// client before the answer. Unknown names report zeros.
func (s *Server) Stats(name string) (requests, failures int64) {
	rt := s.routes[name]
	if rt == nil {
		return 0, 0
	}
	return rt.requests.Load(), rt.failures.Load()
}

// Close stops the server: it closes the listener and every connection,
// cancels requests still waiting out their latency, and returns once all of
// them have returned. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		err := s.srv.Close()
		<-s.served
		s.handlers.Wait()
		s.closeErr = errors.Join(s.serveErr, err)
	})
	return s.closeErr
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()

	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	rt := s.routes[name]
	if rt == nil {
		http.NotFound(w, r)
		return
	}
	rt.requests.Add(1)
	// Read the body before waiting: net/http watches the connection for a
	// client that hangs up (and cancels the request context) only once the
	// body has been consumed. Respond still gets it, from memory.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		rt.failures.Add(1)
		http.Error(w, "request body unreadable or over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	rt.mu.Lock()
	rnd := rand.New(rand.NewPCG(rt.rnd.Uint64(), rt.rnd.Uint64()))
	rt.mu.Unlock()

	if rt.b.Latency != nil {
		if d := rt.b.Latency(time.Since(s.start), rnd); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				// The client timed out or the server is closing: nobody
				// reads an answer any more.
				t.Stop()
				rt.failures.Add(1)
				return
			}
		}
	}

	status, header, answer := http.StatusOK, http.Header(nil), ""
	if rt.b.Respond != nil {
		status, header, answer = rt.b.Respond(time.Since(s.start), rnd, r)
	}
	if status < 200 || status > 299 {
		rt.failures.Add(1)
	}
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if answer != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return name != "." && name != ".."
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
