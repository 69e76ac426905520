package worker

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/tracing"
	"github.com/hookline/hookline/worker/tracing/otlptest"
)

// BenchmarkDeliver measures one claimed delivery from the sender loop's
// call to its outcome, with traces off and on (new traces sampled at 1 %
// and 100 %, exported to a loopback OTLP receiver): the request built and signed, sent over a loopback
// keep-alive connection to a responder that allocates nothing per request,
// so allocs/op are the worker's and the sender's alone. The signing key is
// in the worker's cache, as it is after an endpoint's first delivery.
func BenchmarkDeliver(b *testing.B) {
	url := rawReceiver(b)
	rcv := otlptest.New(b)
	for _, tc := range []struct {
		name  string
		ratio string // "" is traces off
	}{{"off", ""}, {"on_1pct", "0.01"}, {"on_100pct", "1"}} {
		b.Run(tc.name, func(b *testing.B) {
			var tr *tracing.Tracer
			if tc.ratio != "" {
				tr = benchTracer(b, rcv, tc.ratio)
			}
			w := benchWorker(b, func(c *Config) { c.Tracer = tr })
			d := benchClaimed(url)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if o := w.dispatch.attempt(ctx, d); o.res.Outcome != sender.OK {
					b.Fatalf("outcome %q: %s", o.res.Outcome, o.res.Error)
				}
			}
		})
	}
}

// benchTracer exports to rcv over HTTP, sampling new traces at ratio.
func benchTracer(b *testing.B, rcv *otlptest.Receiver, ratio string) *tracing.Tracer {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.HTTPURL, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}
	cfg, errs := tracing.FromEnv(func(k string) string { return env[k] })
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	tr, err := tracing.Start(context.Background(), cfg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

// benchWorker is a worker whose deliveries need no database read: its
// endpoint 1's signing key (version 1) is cached.
func benchWorker(b *testing.B, mod func(*Config)) *Worker {
	b.Helper()
	cfg := Config{Pool: dbtest.Pool(b), SecretKey: masterKey, Guard: loopbackGuard(), UserAgent: "hookline/test"}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w.dispatch.secrets.m = map[int64]secretEntry{1: {version: 1, keys: []signingKey{{key: bytes.Repeat([]byte{7}, 32)}}}}
	return w
}

// benchClaimed is a webhook delivery of a small JSON event to url.
func benchClaimed(url string) claimed {
	return db.DeliveryClaimRow{
		ID: 1, EventID: uuid.Must(uuid.NewV7()), EndpointID: 1, MaxAttempts: 5,
		EventType: "conversion.created", Payload: []byte(`{"click_id":"abc123","payout":"12.50","currency":"USD"}`),
		Kind: "webhook", URL: url + "/hooks/in", Method: "POST", Headers: []byte(`{}`), TimeoutMs: 5000,
		SecretVersion: 1,
	}
}

// rawReceiver serves HTTP/1.1 keep-alive on 127.0.0.1 with a fixed
// "200 ok", reading each request's headers and Content-Length body; it
// allocates nothing per request. It returns the base URL.
func rawReceiver(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			conns.Go(func() {
				defer c.Close()
				r := bufio.NewReaderSize(c, 8<<10)
				for {
					length := 0
					for {
						line, err := r.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
							length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
						}
					}
					if _, err := r.Discard(length); err != nil {
						return
					}
					_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			})
		}
	}()
	return "http://" + ln.Addr().String()
}
