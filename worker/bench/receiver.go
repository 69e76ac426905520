package bench

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/worker/signing"
)

// receiver is the loopback partner: it reads the body and answers 200.
// GET receiverCountPath answers with the requests counted so far, for a
// bench whose receiver runs in another process (Sink).
type receiver struct {
	srv   *http.Server
	url   string
	count atomic.Int64
	tls   *receiverTLS // nil: plain HTTP
}

const receiverCountPath = "/_bench/count"

func newReceiver(delay time.Duration) (*receiver, error) {
	return listenReceiver("127.0.0.1:0", delay)
}

func listenReceiver(addr string, delay time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &receiver{}
	serveReceiver(r, ln, receiverHandler(r, delay), nil, false)
	return r, nil
}

// receiverHandler answers as the drain's receiver does.
func receiverHandler(r *receiver, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == receiverCountPath {
			_, _ = io.WriteString(w, strconv.FormatInt(r.count.Load(), 10))
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		r.count.Add(1)
		w.WriteHeader(http.StatusOK)
	})
}

func (r *receiver) close() { _ = r.srv.Close() }

// arrivals records when each (webhook-id, path) first reached the receiver.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) add(id, path string, t time.Time) {
	if a == nil { // a soak keeps no per-delivery state
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := id + " " + path
	if _, ok := a.at[k]; !ok {
		a.at[k] = t
	}
}

func (a *arrivals) get(id, path string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id+" "+path]
	return t, ok
}

// newTimingReceiver is the loopback partner of newReceiver that also
// notes each request's arrival time under its webhook-id.
// With t it speaks TLS.
func newTimingReceiver(delay time.Duration, arr *arrivals, tl *timeline, t *receiverTLS) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{}
	serveReceiver(r, ln, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		_, _ = io.Copy(io.Discard, req.Body)
		arr.add(req.Header.Get(signing.HeaderID), req.URL.Path, now)
		tl.add(req.Header.Get(signing.HeaderID), now)
		if delay > 0 {
			time.Sleep(delay)
		}
		r.count.Add(1)
		w.WriteHeader(http.StatusOK)
	}), t, false)
	return r, nil
}
