package worker

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/worker/tracing"
)

// attempt is one attempt at a claimed delivery (deliver), in a span of its
// own when traces are on (Config.Tracer): a client span whose parent is
// the span of the request that ingested the event, read back from the
// trace context the event was stored with. The producer's trace so goes
// on across the queue, whichever process sends. An event stored with
// traces off carries none, and its attempts start traces of their own.
// With traces off this is deliver and nothing else: no allocation, no
// clock read.
func (dp *dispatcher) attempt(ctx context.Context, d claimed) outcome {
	t := dp.cfg.Tracer
	if t == nil {
		return dp.deliver(ctx, d)
	}
	if parent := tracing.Resumed(d.TraceContext); parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := t.Start(ctx, tracing.SpanAttempt, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.EventID.String(d.EventID.String()), tracing.EventType.String(d.EventType),
		tracing.DeliveryID.Int64(d.ID), tracing.EndpointID.Int64(d.EndpointID), tracing.PartnerID.Int64(d.PartnerID),
		tracing.Attempt.Int(int(d.AttemptCount)+1), tracing.HTTPMethod.String(d.Method)))
	o := dp.deliver(ctx, d)
	if span.IsRecording() {
		r := &o.res
		span.SetAttributes(tracing.Outcome.String(string(r.Outcome)),
			tracing.DurationMs.Float64(float64(r.Duration)/float64(time.Millisecond)))
		if r.StatusCode != 0 {
			span.SetAttributes(tracing.StatusCode.Int(r.StatusCode))
		}
		if r.ErrorClass != "" {
			span.SetAttributes(tracing.ErrorType.String(r.ErrorClass))
			span.SetStatus(codes.Error, r.Error)
		}
	}
	span.End()
	o.span = span.SpanContext()
	return o
}

// traceHeader gives an attempt to an endpoint that asks for it
// (send_traceparent) the traceparent of the attempt's span, so the
// receiver's own trace joins the event's. With traces off there is no
// span, and no header.
func (dp *dispatcher) traceHeader(ctx context.Context, h http.Header) {
	if dp.cfg.Tracer != nil {
		tracing.Inject(ctx, h)
	}
}
