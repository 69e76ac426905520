package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/tracing/otlptest"
)

// producerTrace is the producer's span, sent as traceparent with the
// event: hookline's spans must join its trace.
const (
	producerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpanID  = "00f067aa0ba902b7"
)

// tracedReceiver records the traceparent of each request it answers.
type tracedReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
}

func newTracedReceiver(t *testing.T) *tracedReceiver {
	r := &tracedReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.parents = append(r.parents, req.Header.Get("traceparent"))
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *tracedReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.parents...)
}

// startWorker runs "hookline worker" (no listener of its own) until the
// returned stop, which fails the test if it does not stop cleanly.
func startWorker(t *testing.T, env map[string]string) (stop func()) {
	t.Helper()
	env["HOOKLINE_METRICS_ADDR"] = "off"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("hookline worker exited with %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Error("hookline worker did not stop within 60 s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// postTraced posts one event with the producer's traceparent and
// tracestate.
func postTraced(t *testing.T, addr, key string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"type": "order.created", "payload": map[string]any{"n": 1}})
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/events", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+producerTraceID+"-"+producerSpanID+"-01")
	req.Header.Set("tracestate", "producer=1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("event: %d %v", resp.StatusCode, out)
	}
	return out["id"].(string)
}

// tracedEndpoint makes an API key, a partner and a webhook endpoint to
// url through the API of the process at addr, with send_traceparent.
func tracedEndpoint(t *testing.T, env map[string]string, addr, url string) (key string, partnerID, endpointID int64) {
	t.Helper()
	key = lastLine(command(t, env, "", "apikey", "create", "--name", "traces"))
	status, partner := api(t, addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, partner)
	}
	status, ep := api(t, addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "hook", "kind": "webhook", "url": url + "/in", "send_traceparent": true})
	if status != 201 || ep["send_traceparent"] != true {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	return key, int64(partner["id"].(float64)), int64(ep["id"].(float64))
}

// TestTracesFollowAnEventAcrossTheQueue runs "hookline web" exporting over
// HTTP/protobuf and "hookline worker" exporting over gRPC, sharing only
// the database, both to a real OTLP receiver. A producer's traceparent
// becomes the parent of the ingest span, whose context the event stores;
// the worker's attempt span is that span's child, in the producer's trace,
// and the receiver is sent the attempt's traceparent. Stopping each
// process exports its last spans.
func TestTracesFollowAnEventAcrossTheQueue(t *testing.T) {
	t.Parallel()
	otlp := otlptest.New(t)
	rcv := newTracedReceiver(t)
	url := dbtest.URL(t)
	webEnv := serveEnv(t, url)
	webEnv["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp.HTTPURL
	webEnv["OTEL_SERVICE_NAME"] = "hookline-web"
	web := start(t, webEnv, "web")
	key, partnerID, endpointID := tracedEndpoint(t, webEnv, web.addr, rcv.URL)

	workerEnv := serveEnv(t, url)
	workerEnv["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp.GRPCURL
	workerEnv["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
	workerEnv["OTEL_SERVICE_NAME"] = "hookline-worker"
	workerEnv["OTEL_TRACES_SAMPLER"] = "parentbased_traceidratio"
	workerEnv["OTEL_TRACES_SAMPLER_ARG"] = "1"
	stopWorker := startWorker(t, workerEnv)

	eventID := postTraced(t, web.addr, key)
	waitUntil(t, 30*time.Second, "the receiver's request", func() bool { return len(rcv.received()) == 1 })
	sent := rcv.received()[0]
	waitUntil(t, 30*time.Second, "the attempt recorded", func() bool {
		_, ev := api(t, web.addr, key, "GET", "/api/v1/events/"+eventID, nil)
		return ev["deliveries"].([]any)[0].(map[string]any)["status"] == "delivered"
	})
	stopWorker()
	web.stop()

	spans := otlp.Spans()
	ingest := otlptest.Named(spans, "POST /api/v1/events")
	if len(ingest) != 1 {
		t.Fatalf("%d ingest spans of %d spans", len(ingest), len(spans))
	}
	in := ingest[0]
	if in.TraceID != producerTraceID || in.ParentID != producerSpanID || in.Transport != "http" || in.Service != "hookline-web" ||
		in.Kind.String() != "SPAN_KIND_SERVER" || in.Attrs["http.route"] != "/api/v1/events" || in.Attrs["http.response.status_code"] != int64(202) ||
		in.TraceState != "producer=1" {
		t.Fatalf("ingest span %+v", in)
	}
	fan := otlptest.Named(spans, "hookline.fanout")
	if len(fan) != 1 || fan[0].ParentID != in.SpanID || fan[0].Attrs["hookline.events"] != int64(1) || fan[0].Attrs["hookline.deliveries"] != int64(1) {
		t.Fatalf("fan-out spans %+v", fan)
	}
	attempts := otlptest.Named(spans, "hookline.attempt")
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans", len(attempts))
	}
	a := attempts[0]
	if a.TraceID != producerTraceID || a.ParentID != in.SpanID || a.Transport != "grpc" || a.Service != "hookline-worker" || a.Kind.String() != "SPAN_KIND_CLIENT" {
		t.Fatalf("attempt span %+v, want the child of ingest span %s", a, in.SpanID)
	}
	want := map[string]any{"hookline.endpoint.id": endpointID, "hookline.partner.id": partnerID, "hookline.attempt": int64(1),
		"hookline.outcome": "ok", "http.response.status_code": int64(200), "hookline.event.id": eventID, "http.request.method": "POST"}
	for k, v := range want {
		if a.Attrs[k] != v {
			t.Fatalf("attempt attribute %s = %v (%T), want %v; all %v", k, a.Attrs[k], a.Attrs[k], v, a.Attrs)
		}
	}
	if d, ok := a.Attrs["hookline.duration_ms"].(float64); !ok || d <= 0 {
		t.Fatalf("attempt duration %v", a.Attrs["hookline.duration_ms"])
	}
	if _, ok := a.Attrs["error.type"]; ok {
		t.Fatalf("a delivered attempt has error.type: %v", a.Attrs)
	}
	if sent != "00-"+producerTraceID+"-"+a.SpanID+"-01" {
		t.Fatalf("receiver got traceparent %q, want the attempt span's", sent)
	}
	linked := func(name string, to otlptest.Span) {
		t.Helper()
		for _, s := range otlptest.Named(spans, name) {
			for _, l := range s.Links {
				if l.TraceID == to.TraceID && l.SpanID == to.SpanID {
					if s.Service != "hookline-worker" || s.ParentID != "" {
						t.Fatalf("%s span %+v", name, s)
					}
					return
				}
			}
		}
		t.Fatalf("no %s span links to span %s", name, to.SpanID)
	}
	linked("hookline.claim", in)
	linked("hookline.complete", a)

	// The event stored its ingest span's context.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored string
	if err := conn.QueryRow(context.Background(), "SELECT trace_context FROM events WHERE id = $1", eventID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != "00-"+producerTraceID+"-"+in.SpanID+"-01 producer=1" {
		t.Fatalf("stored trace context %q", stored)
	}
}

// TestTracesOffExportNothing: with OTEL_TRACES_EXPORTER=none (an endpoint
// set beside it), and with a sampler that records nothing, no span
// reaches the receiver; with traces off the event stores no trace context
// and an endpoint that asks for a traceparent gets none.
func TestTracesOffExportNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    map[string]string
		stored bool
	}{
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{"sampled at 0", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			otlp := otlptest.New(t)
			rcv := newTracedReceiver(t)
			url := dbtest.URL(t)
			env := serveEnv(t, url)
			env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp.HTTPURL
			for k, v := range tc.env {
				env[k] = v
			}
			p := start(t, env, "serve")
			key, _, _ := tracedEndpoint(t, env, p.addr, rcv.URL)
			eventID := postTraced(t, p.addr, key)
			waitUntil(t, 30*time.Second, "the receiver's request", func() bool { return len(rcv.received()) == 1 })
			p.stop()
			if n := otlp.Exports(); n != 0 {
				t.Fatalf("%d exports (%d spans), want none", n, len(otlp.Spans()))
			}
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var stored *string
			if err := conn.QueryRow(context.Background(), "SELECT trace_context FROM events WHERE id = $1", eventID).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			sent := rcv.received()[0]
			if tc.stored {
				// Not sampled, the context still travels: the receiver
				// joins the producer's trace id, marked not sampled.
				if stored == nil || !strings.HasPrefix(sent, "00-"+producerTraceID+"-") || !strings.HasSuffix(sent, "-00") {
					t.Fatalf("stored %v, sent %q", stored, sent)
				}
				return
			}
			if stored != nil || sent != "" {
				t.Fatalf("traces off: stored %v, sent traceparent %q", stored, sent)
			}
		})
	}
}
