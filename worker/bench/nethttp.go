package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// netHTTPSender sends the way the bare and naive baselines did when the
// performance targets were set: net/http's client, through the same guard,
// on a transport configured as hookline's sender's was. hookline's sender
// moved to fasthttp's client; the baselines did not, so that "hookline ÷
// bare" keeps the reference it had (performance.md, "The sender's HTTP
// client"). It reports only what the baselines read: outcome, status,
// start and duration.
type netHTTPSender struct {
	t  *http.Transport
	ua []string
}

func newNetHTTPSender(guard *ssrf.Guard, perHost int) *netHTTPSender {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guard.Control}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	return &netHTTPSender{
		t: &http.Transport{
			DialContext:            dialer.DialContext,
			Protocols:              &protocols,
			MaxIdleConns:           4096,
			MaxIdleConnsPerHost:    perHost,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
			DisableCompression:     true,
		},
		ua: []string{"hookline/bench"},
	}
}

func (s *netHTTPSender) Close() { s.t.CloseIdleConnections() }

func (s *netHTTPSender) Send(ctx context.Context, r sender.Request) sender.Result {
	start := time.Now()
	res := sender.Result{Started: start}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		res.Outcome, res.Error = sender.Permanent, err.Error()
		return res
	}
	req.Header = r.Header
	req.Header["User-Agent"] = s.ua
	resp, err := s.t.RoundTrip(req)
	if err != nil {
		res.Outcome, res.Error, res.Duration = sender.Transient, err.Error(), time.Since(start)
		return res
	}
	var buf [sender.MaxBodyRead]byte
	io.ReadFull(resp.Body, buf[:])
	resp.Body.Close()
	res.StatusCode, res.Duration = resp.StatusCode, time.Since(start)
	res.Outcome = sender.Transient
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		res.Outcome = sender.OK
	}
	return res
}
