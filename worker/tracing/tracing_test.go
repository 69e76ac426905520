package tracing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/tracing"
	"github.com/hookline/hookline/worker/tracing/otlptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		off      bool
		protocol string
		endpoint string
		sampler  string
		service  string
		err      string
	}{
		{name: "nothing set: off", env: nil, off: true},
		{name: "an endpoint: on over HTTP", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			protocol: "http/protobuf", endpoint: "http://127.0.0.1:4318/v1/traces", sampler: "parentbased_always_on", service: "hookline"},
		{name: "a traces endpoint is used as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.test/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other.test"},
			protocol: "http/protobuf", endpoint: "https://c.test/custom", sampler: "parentbased_always_on", service: "hookline"},
		{name: "gRPC takes the base endpoint without a path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			protocol: "grpc", endpoint: "http://127.0.0.1:4317", sampler: "parentbased_always_on", service: "hookline"},
		{name: "the traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			protocol: "grpc", endpoint: "http://127.0.0.1:4317", sampler: "parentbased_always_on", service: "hookline"},
		{name: "exporter otlp alone: the default endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			protocol: "http/protobuf", endpoint: "http://localhost:4318/v1/traces", sampler: "parentbased_always_on", service: "hookline"},
		{name: "exporter none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, off: true},
		{name: "SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, off: true},
		{name: "sampler and service", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01", "OTEL_SERVICE_NAME": "hooks-eu"},
			protocol: "http/protobuf", endpoint: "http://127.0.0.1:4318/v1/traces", sampler: "parentbased_traceidratio 0.01", service: "hooks-eu"},
		{name: "service from the resource attributes", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=hooks%20b"},
			protocol: "http/protobuf", endpoint: "http://127.0.0.1:4318/v1/traces", sampler: "parentbased_always_on", service: "hooks b"},
		{name: "a bad ratio", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, err: "OTEL_TRACES_SAMPLER_ARG"},
		{name: "an unknown sampler", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, err: "OTEL_TRACES_SAMPLER:"},
		{name: "http/json is not served", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "an endpoint that is no URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "another exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, errs := tracing.FromEnv(envOf(tc.env))
			if tc.err != "" {
				if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.err) {
					t.Fatalf("errors %v, want one naming %s", errs, tc.err)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("errors %v", errs)
			}
			if tc.off {
				if c != nil {
					t.Fatalf("config %+v, want off (nil)", c)
				}
				return
			}
			if c == nil {
				t.Fatal("off, want on")
			}
			if c.Protocol != tc.protocol || c.Endpoint != tc.endpoint || c.SamplerName != tc.sampler || c.ServiceName != tc.service {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

// start is a tracer exporting to rcv by protocol, with the environment's
// sampler settings.
func start(t *testing.T, rcv *otlptest.Receiver, protocol string, env map[string]string) *tracing.Tracer {
	t.Helper()
	full := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": protocol, "OTEL_SERVICE_NAME": "hookline-test"}
	full["OTEL_EXPORTER_OTLP_ENDPOINT"] = rcv.HTTPURL
	if protocol == tracing.ProtocolGRPC {
		full["OTEL_EXPORTER_OTLP_ENDPOINT"] = rcv.GRPCURL
	}
	for k, v := range env {
		full[k] = v
	}
	cfg, errs := tracing.FromEnv(envOf(full))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tr, err := tracing.Start(context.Background(), cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Spans reach a real OTLP receiver over both transports, and Shutdown
// exports what is still batched (the batch processor waits 5 s by
// default: the spans arriving at once are Shutdown's).
func TestExportsOverBothTransportsOnShutdown(t *testing.T) {
	for _, protocol := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			rcv := otlptest.New(t)
			tr := start(t, rcv, protocol, nil)
			ctx, parent := tr.Start(context.Background(), "parent")
			_, child := tr.Start(ctx, "child", trace.WithAttributes(tracing.EndpointID.Int64(7)))
			child.End()
			parent.End()
			shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Shutdown(shut); err != nil {
				t.Fatal(err)
			}
			spans := rcv.Spans()
			if len(spans) != 2 {
				t.Fatalf("received %d spans after Shutdown, want 2", len(spans))
			}
			p, c := otlptest.Named(spans, "parent")[0], otlptest.Named(spans, "child")[0]
			want := map[string]string{tracing.ProtocolHTTP: "http", tracing.ProtocolGRPC: "grpc"}[protocol]
			if c.ParentID != p.SpanID || c.TraceID != p.TraceID || p.ParentID != "" || c.Transport != want || c.Service != "hookline-test" {
				t.Fatalf("parent %+v child %+v", p, c)
			}
			if c.Attrs["hookline.endpoint.id"] != int64(7) {
				t.Fatalf("attributes %v", c.Attrs)
			}
		})
	}
}

// Ratio 0 records nothing of a new trace, ratio 1 everything; a remote
// parent's decision is followed either way (parent based).
func TestSampling(t *testing.T) {
	rcv := otlptest.New(t)
	never := start(t, rcv, tracing.ProtocolHTTP, map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"})
	always := start(t, rcv, tracing.ProtocolHTTP, map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"})
	for range 20 {
		_, s := never.Start(context.Background(), "never")
		s.End()
		_, s = always.Start(context.Background(), "always")
		s.End()
	}
	// A sampled producer's trace is recorded even at ratio 0.
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	_, s := never.Start(tracing.Extract(context.Background(), h), "sampled parent")
	s.End()
	for _, tr := range []*tracing.Tracer{never, always} {
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	spans := rcv.Spans()
	if n := len(otlptest.Named(spans, "never")); n != 0 {
		t.Fatalf("ratio 0 exported %d spans", n)
	}
	if n := len(otlptest.Named(spans, "always")); n != 20 {
		t.Fatalf("ratio 1 exported %d spans, want 20", n)
	}
	if p := otlptest.Named(spans, "sampled parent"); len(p) != 1 || p[0].TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || p[0].ParentID != "00f067aa0ba902b7" {
		t.Fatalf("remote parent: %+v", p)
	}
}

// Off is a nil Tracer: Start returns one, and its Shutdown does nothing.
func TestOffIsNil(t *testing.T) {
	tr, err := tracing.Start(context.Background(), nil, "test")
	if err != nil || tr != nil {
		t.Fatalf("Start(nil) = %v, %v", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The context an event stores carries traceparent and tracestate, and
// comes back as the remote parent it was.
func TestCarriedRoundTrip(t *testing.T) {
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "Tracestate": {"vendor=a b,other=1"}}
	ctx := tracing.Extract(context.Background(), h)
	stored := tracing.Carried(ctx)
	if stored == nil || *stored != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 vendor=a b,other=1" {
		t.Fatalf("carried %v", stored)
	}
	sc := tracing.Resumed(stored)
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		sc.SpanID().String() != "00f067aa0ba902b7" || sc.TraceState().Get("vendor") != "a b" {
		t.Fatalf("resumed %+v", sc)
	}
	if tracing.Carried(context.Background()) != nil || tracing.Resumed(nil).IsValid() {
		t.Fatal("no span context must carry nothing")
	}
	bad := "not a traceparent"
	if tracing.Resumed(&bad).IsValid() {
		t.Fatal("a bad stored value must resume nothing")
	}
	out := http.Header{}
	tracing.Inject(trace.ContextWithRemoteSpanContext(context.Background(), sc), out)
	if out.Get("traceparent") != h.Get("Traceparent") {
		t.Fatalf("injected %v", out)
	}
}
