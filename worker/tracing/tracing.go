package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tracer makes hookline's spans and exports them over OTLP. A nil *Tracer
// is traces off: callers check for nil before anything else, so off costs
// one comparison.
type Tracer struct {
	provider *sdktrace.TracerProvider
	trace.Tracer
}

// Start builds the tracer provider cfg asks for (nil: off, and a nil
// Tracer). Spans are batched and exported in the background; Shutdown
// exports what is left. Every other OTEL_EXPORTER_OTLP_* setting (headers,
// certificates, compression, timeout) and the batch processor's
// OTEL_BSP_* are read by the SDK from the process's environment.
func Start(ctx context.Context, cfg *Config, version string) (*Tracer, error) {
	if cfg == nil {
		return nil, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch cfg.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s to %s): %w", cfg.Protocol, cfg.Endpoint, err)
	}
	// OTEL_RESOURCE_ATTRIBUTES first; the service's own name and version
	// over it.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithProcessPID(),
		resource.WithHost(), resource.WithAttributes(
			attribute.String("service.name", cfg.ServiceName), attribute.String("service.version", version)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(cfg.Sampler))
	return &Tracer{provider: tp, Tracer: tp.Tracer("github.com/hookline/hookline", trace.WithInstrumentationVersion(version))}, nil
}

// Shutdown exports the spans still batched and stops the exporter, within
// ctx. It is the last thing a process does with its tracer; a nil Tracer
// has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// w3c is the W3C Trace Context propagator: traceparent and tracestate. It
// holds nothing.
var w3c propagation.TraceContext

// Extract is ctx with the remote parent a request's traceparent and
// tracestate headers name (the producer's trace), if they name a valid
// one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject sets traceparent (and tracestate) on h to the span of ctx: the
// receiver's server span becomes its child.
func Inject(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Carried is the span context of ctx as the event stores it
// (events.trace_context): its traceparent, then a space and its
// tracestate when it has one. Nil when ctx has no valid span context. A
// span that was not sampled is carried too: its attempts then follow its
// decision, and a receiver sent a traceparent still joins the producer's
// trace id.
func Carried(ctx context.Context) *string {
	var c carrier
	w3c.Inject(ctx, &c)
	if c.parent == "" {
		return nil
	}
	s := c.parent
	if c.state != "" {
		s += " " + c.state
	}
	return &s
}

// Resumed is the remote span context stored, the parent of an attempt's
// span; invalid (no parent: a root span) when nothing usable was stored.
func Resumed(stored *string) trace.SpanContext {
	if stored == nil {
		return trace.SpanContext{}
	}
	var c carrier
	c.parent, c.state, _ = strings.Cut(*stored, " ")
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), &c))
}

// carrier holds one traceparent and tracestate.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Open is Start for a process that serves: it logs whether traces are on,
// and where they go, and returns the tracer with its close, which exports
// what is left (within 10 s) once everything that makes spans has
// stopped. A nil cfg is traces off: a nil Tracer and a close that does
// nothing.
func Open(ctx context.Context, cfg *Config, version string, log *slog.Logger) (*Tracer, func(), error) {
	if cfg == nil {
		log.Debug("traces off (no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER=otlp)")
		return nil, func() {}, nil
	}
	t, err := Start(ctx, cfg, version)
	if err != nil {
		return nil, nil, err
	}
	log.Info("traces on", "protocol", cfg.Protocol, "endpoint", cfg.Endpoint, "sampler", cfg.SamplerName, "service", cfg.ServiceName)
	return t, func() {
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := t.Shutdown(shut); err != nil {
			log.Error("exporting the last spans", "err", err)
		}
	}, nil
}
