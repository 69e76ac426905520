package sender

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/ssrf"
)

// closedPort is a loopback address nothing listens on: connections to it
// are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// fullListener is a loopback address whose accept queue is full and never
// drained: the kernel drops further SYNs, so a dial to it times out as one
// to a host that is down does.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the queue (a backlog of 0 holds one connection), then make
	// sure a further dial does hang.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return addr
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i == 8 {
			t.Fatal("the kernel accepted 9 connections on a backlog of 0: no dial timeout to test on loopback")
		}
	}
}

// TestTransportFailure: what a real send records for a refused connection
// and a dial that timed out is a transport failure; a 5xx, a response that
// timed out and an egress proxy's failure are not.
func TestTransportFailure(t *testing.T) {
	s := newTestSender(t, Options{})
	ctx := context.Background()
	check := func(name string, res Result, want bool) {
		t.Helper()
		if got := TransportFailure(res.ErrorClass, res.Error); got != want {
			t.Errorf("%s (%s: %q): TransportFailure %v, want %v", name, res.ErrorClass, res.Error, got, want)
		}
	}
	check("refused", s.Send(ctx, Request{URL: "http://" + closedPort(t) + "/hook"}), true)

	srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	check("500", s.Send(ctx, Request{URL: srv.URL}), false)

	hang, _ := blockingServer(t, false)
	check("response timeout", s.Send(ctx, Request{URL: hang.URL, Timeout: 100 * time.Millisecond}), false)

	proxied := newTestSender(t, Options{Proxy: &url.URL{Scheme: "http", Host: closedPort(t)}})
	check("egress proxy refused", proxied.Send(ctx, Request{URL: srv.URL}), false)

	t.Run("dial timeout", func(t *testing.T) {
		addr := fullListener(t)
		res := s.Send(ctx, Request{URL: "http://" + addr + "/hook", Timeout: 200 * time.Millisecond})
		if res.ErrorClass != ClassTimeout || res.Error != "timeout after 200ms while connecting" {
			t.Fatalf("got %q %q, want a timeout while connecting", res.ErrorClass, res.Error)
		}
		check("dial timeout", res, true)
	})

	for _, tc := range []struct {
		class, text string
		want        bool
	}{
		{ClassConnect, "connection reset by peer", true},
		{ClassConnect, "host unreachable", true},
		{ClassConnect, "network unreachable", true},
		{ClassConnect, "connection closed before the response", false},
		{ClassConnect, "invalid response headers", false},
		{ClassConnect, "egress proxy 127.0.0.1:3128: connection refused", false},
		{ClassTimeout, "timeout after 10s", false},
		{ClassTimeout, "timeout after 10s (at egress proxy 127.0.0.1:3128)", false},
		{ClassHTTPStatus, "connection refused", false},
		{"", "", false},
	} {
		if got := TransportFailure(tc.class, tc.text); got != tc.want {
			t.Errorf("TransportFailure(%q, %q) = %v, want %v", tc.class, tc.text, got, tc.want)
		}
	}
}

// TestReachable: a listening receiver is reachable and receives not a
// byte; a closed port, an address the guard refuses and a dial that times
// out are not; a request through an egress proxy, or with a macro for a
// host, is not checked at all.
func TestReachable(t *testing.T) {
	ctx := context.Background()
	s := newTestSender(t, Options{})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c) // until the check closes the connection
		got <- len(b)
	}()
	if err := s.Reachable(ctx, "http://"+ln.Addr().String()+"/hook?token=abc", nil, time.Second); err != nil {
		t.Fatalf("listening receiver: %v", err)
	}
	if n := <-got; n != 0 {
		t.Fatalf("the receiver read %d bytes from the check, want 0 (and the connection closed)", n)
	}

	if err := s.Reachable(ctx, "https://"+closedPort(t), nil, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("closed port: %v, want connection refused", err)
	}
	var blocked *ssrf.BlockedError
	strict := newTestSender(t, Options{Guard: ssrf.New(nil)})
	if err := strict.Reachable(ctx, "http://"+ln.Addr().String(), nil, time.Second); !errors.As(err, &blocked) {
		t.Fatalf("loopback under the production guard: %v, want the guard's refusal", err)
	}
	if err := s.Reachable(ctx, "http://{host}.test/pb?cid={click_id}", nil, time.Second); !errors.Is(err, ErrNoHost) {
		t.Fatalf("macro host: %v, want ErrNoHost", err)
	}
	t.Run("dial timeout", func(t *testing.T) {
		addr := fullListener(t)
		err := s.Reachable(ctx, "http://"+addr, nil, 200*time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("full backlog: %v, want a timeout", err)
		}
	})

	proxy := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	viaDefault := newTestSender(t, Options{Proxy: proxy})
	for name, tc := range map[string]struct {
		s      *Sender
		e      *Egress
		direct bool
	}{
		"no proxy":                    {s, nil, true},
		"endpoint proxy":              {s, &Egress{Proxy: proxy}, false},
		"default proxy":               {viaDefault, nil, false},
		"default proxy, other egress": {viaDefault, &Egress{Key: "1"}, false},
		"default proxy, direct":       {viaDefault, &Egress{Direct: true}, true},
	} {
		if got := tc.s.Direct(tc.e); got != tc.direct {
			t.Errorf("%s: Direct %v, want %v", name, got, tc.direct)
		}
		if !tc.direct {
			if err := tc.s.Reachable(ctx, "http://"+closedPort(t), tc.e, time.Second); !errors.Is(err, ErrViaProxy) {
				t.Errorf("%s: Reachable %v, want ErrViaProxy", name, err)
			}
		}
	}
}
