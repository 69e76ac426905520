// The connection as the Sender tracks it, so that an exchange can be
// aborted from outside.

package sender

import (
	"errors"
	"net"
	"sync"
	"time"
)

// conn is a dialled connection as the Sender tracks it. Once aborted
// (Sender.abort) its exchange in progress fails and so does any later one:
// every deadline set on it is in the past, and a write fails with
// errAborted before sending anything.
type conn struct {
	net.Conn
	addr   string // host:port as dialled
	s      *Sender
	remote *connAddr
	once   sync.Once

	mu      sync.Mutex // orders deadline changes with abort
	aborted bool
}

// errAborted is a write on an aborted connection: nothing of the request
// was sent, so it can go out on another connection.
var errAborted = errors.New("connection aborted")

// past is the deadline of an aborted connection.
var past = time.Unix(1, 0)

func (c *conn) Close() error {
	c.once.Do(func() {
		c.s.connMu.Lock()
		delete(c.s.conns, c)
		c.s.connMu.Unlock()
	})
	return c.Conn.Close()
}

func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (s *Sender) track(c *conn) {
	s.connMu.Lock()
	s.conns[c] = struct{}{}
	s.connMu.Unlock()
}

func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted = true
	c.Conn.SetDeadline(past)
}

func (c *conn) Write(b []byte) (int, error) {
	c.mu.Lock()
	aborted := c.aborted
	c.mu.Unlock()
	if aborted {
		return 0, errAborted
	}
	return c.Conn.Write(b)
}

func (c *conn) SetDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetDeadline)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetReadDeadline)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(t, c.Conn.SetWriteDeadline)
}

func (c *conn) setDeadline(t time.Time, set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		t = past
	}
	return set(t)
}
