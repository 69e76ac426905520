// Package demo fills a running hookline with a living sample: partners and
// endpoints pointing at simulated receivers on loopback (worker/simulate),
// 24 hours of latency history so the sparklines have a shape at once, and a
// steady stream of order, invoice and conversion events. `hookline demo`
// runs it against its own embedded database.
//
// Everything but the latency history goes through hookline's public HTTP
// API with an API key, exactly as a producer would use it, so the demo also
// exercises the API it shows off.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/worker/simulate"
)

// Options says where the demo runs and how busy it is.
type Options struct {
	BaseURL   string // the running hookline, e.g. http://127.0.0.1:8080
	APIKey    string // created by the caller with account.CreateAPIKey
	Receivers *simulate.Server
	// Pool is used only by BackfillLatency; everything else goes through
	// the API.
	Pool   *pgxpool.Pool
	Rate   float64 // events per second of the stream (default 8)
	Logger *slog.Logger
	Now    func() time.Time
	// Seed makes the generated events and latency history reproducible;
	// 0 picks one at random.
	Seed uint64
}

// DefaultRate is the stream's events per second when Options.Rate is unset.
const DefaultRate = 8

// requestTimeout bounds every API call the demo makes.
const requestTimeout = 10 * time.Second

func (o Options) withDefaults() Options {
	if !(o.Rate > 0) {
		o.Rate = DefaultRate
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o
}

// apiError is a non-2xx answer of the hookline API.
type apiError struct {
	Method, Path string
	Status       int
	Code         string
	Message      string
	Field        string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	return msg
}

func statusOf(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// client calls the hookline API with the demo's key.
type client struct {
	base string
	key  string
	hc   *http.Client
}

func newClient(o Options) (*client, error) {
	if o.BaseURL == "" {
		return nil, errors.New("demo: BaseURL is required (the running hookline, e.g. http://127.0.0.1:8080)")
	}
	if o.APIKey == "" {
		return nil, errors.New("demo: APIKey is required")
	}
	// No proxy: the demo talks to hookline on loopback only.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &client{
		base: strings.TrimSuffix(o.BaseURL, "/"),
		key:  o.APIKey,
		hc:   &http.Client{Timeout: requestTimeout, Transport: tr},
	}, nil
}

// maxResponseBytes bounds what the demo reads of an API answer.
const maxResponseBytes = 16 << 20

// call sends in as JSON (nil: no body) and decodes a 2xx answer into out
// (nil: ignored). Any other status is an *apiError.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &apiError{Method: method, Path: path, Status: resp.StatusCode}
		var env struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		if json.Unmarshal(raw, &env) == nil {
			e.Code, e.Message, e.Field = env.Error.Code, env.Error.Message, env.Error.Field
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
