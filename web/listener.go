package web

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPServer is the public listener's server with the edge's header
// timeout, header size and idle timeout. Body and write deadlines are set
// per request by the edge (they differ by route family), so the server's
// own ReadTimeout and WriteTimeout stay unset.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.HeaderTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		IdleTimeout:       s.limits.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// LimitListener caps ln at the edge's MaxConnections open connections.
// At the cap, Accept waits for one to close (new clients queue in the
// kernel's backlog rather than being refused), and a line is logged,
// at most once a minute, so the operator sees why clients wait.
//
// golang.org/x/net/netutil.LimitListener does the waiting but cannot say
// when the cap is reached, which is the point of the log line.
func (s *Server) LimitListener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, s.limits.MaxConnections), log: s.log}
}

type limitListener struct {
	net.Listener
	sem    chan struct{}
	log    *slog.Logger
	mu     sync.Mutex
	logged time.Time
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.full()
		l.sem <- struct{}{}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) full() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.logged) < time.Minute {
		return
	}
	l.logged = time.Now()
	l.log.Warn("connection limit reached: new connections wait until one closes (HOOKLINE_MAX_CONNECTIONS)",
		"max_connections", cap(l.sem))
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
