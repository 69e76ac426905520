// Package otlptest is an OTLP trace receiver for tests: the collector's
// TraceService over gRPC and its HTTP/protobuf endpoint (/v1/traces), each
// decoding the real wire protocol into the OpenTelemetry protocol's own
// generated types (go.opentelemetry.io/proto/otlp), as a collector does.
// What the exporters send is what the tests read.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Transport  string // "http" or "grpc": how it arrived
	Service    string // the resource's service.name
	Name       string
	Kind       tracepb.Span_SpanKind
	TraceID    string // hex
	SpanID     string
	ParentID   string // "" for a root span
	Flags      uint32
	TraceState string
	Start, End time.Time
	Attrs      map[string]any // string, int64, float64 or bool
	Links      []Link
	Status     tracepb.Status_StatusCode
}

// Link is a span link.
type Link struct{ TraceID, SpanID string }

// Receiver records every span sent to it until the test ends.
type Receiver struct {
	// HTTPURL is the base URL of the HTTP/protobuf receiver (the exporter
	// appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT); GRPCURL is the
	// gRPC receiver's, without TLS.
	HTTPURL, GRPCURL string

	mu      sync.Mutex
	spans   []Span
	exports int
	arrived chan struct{} // closed and replaced on each export
}

// New starts both receivers on loopback ports; they stop when the test
// ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{arrived: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(srv.Close)
	r.HTTPURL = srv.URL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, grpcService{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(ln)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	r.GRPCURL = "http://" + ln.Addr().String()
	return r
}

type grpcService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s grpcService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.record("grpc", req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// serveHTTP is the OTLP/HTTP binary protocol: a POST of an
// ExportTraceServiceRequest, gzip-encoded or not, answered with an
// ExportTraceServiceResponse.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.record("http", &msg)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func (r *Receiver) record(transport string, req *coltracepb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Transport: transport, Service: service, Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Flags: s.GetFlags(), TraceState: s.GetTraceState(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attrs: attrs(s.GetAttributes()), Status: s.GetStatus().GetCode()}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.exports++
	close(r.arrived)
	r.arrived = make(chan struct{})
	r.mu.Unlock()
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		}
	}
	return m
}

// Spans is every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Exports is how many export requests arrived.
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

// Named is the spans called name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor waits up to 30 s for cond to hold over the spans received, and
// returns them; it fails the test when it never does.
func (r *Receiver) WaitFor(t testing.TB, what string, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		spans, arrived := append([]Span(nil), r.spans...), r.arrived
		r.mu.Unlock()
		if cond(spans) {
			return spans
		}
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("waited 30 s for %s; received %d spans", what, len(spans))
			return nil
		}
	}
}
