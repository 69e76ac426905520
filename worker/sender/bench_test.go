package sender

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// benchRequest looks like a signed webhook: a few headers and a small JSON
// body, with the User-Agent pre-set as the worker sets it.
func benchRequest(url string) Request {
	return Request{
		Method: "POST",
		URL:    url,
		Header: http.Header{
			"Content-Type":      {"application/json"},
			"User-Agent":        {"hookline/test"},
			"Webhook-Id":        {"01963b4c-8a2e-7c3d-9f10-3b2a1c0d4e5f"},
			"Webhook-Timestamp": {"1767268800"},
			"Webhook-Signature": {"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="},
		},
		Body:    []byte(`{"type":"conversion.created","data":{"click_id":"abc123","payout":"12.50","currency":"USD"}}`),
		Timeout: 5 * time.Second,
	}
}

// BenchmarkSend measures one attempt over a loopback keep-alive
// connection with the guard allowing 127.0.0.0/8. "httptest" includes the
// allocations of net/http's server, which runs in the same process;
// "raw" answers from a minimal responder that allocates nothing per
// request, so its allocs/op are the client side's alone.
func BenchmarkSend(b *testing.B) {
	servers := []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"httptest", func(b *testing.B) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, "ok")
			}))
			b.Cleanup(srv.Close)
			return srv.URL
		}},
		{"raw", rawResponder},
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			url := srv.url(b) + "/hooks/in"
			s := newTestSender(b, Options{})
			req := benchRequest(url)
			ctx := context.Background()

			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res := s.Send(ctx, req); res.Outcome != OK {
						b.Fatalf("outcome %q: %s", res.Outcome, res.Error)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if res := s.Send(ctx, req); res.Outcome != OK {
							b.Errorf("outcome %q: %s", res.Outcome, res.Error)
							return
						}
					}
				})
			})
		})
	}
}

// rawResponder serves HTTP/1.1 keep-alive on 127.0.0.1 with a fixed
// "200 ok" answer, reading each request's headers and Content-Length body.
func rawResponder(b *testing.B) string {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
	return "http://" + tcpServer(b, func(c net.Conn) {
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
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	})
}

// tcpServer accepts loopback connections until the test ends, each served
// by handle on a goroutine of its own and closed when handle returns. It
// returns the listener's address.
func tcpServer(t testing.TB, handle func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
