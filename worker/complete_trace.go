package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/worker/tracing"
)

// traceFlush records one try (try, from 1) at recording a completion
// batch, started at start, as a span linked to the spans of the attempts
// it records; err is the try's failure, if any. A batch records attempts
// of many traces, so it is none's child. Nothing with traces off.
func (c *completer) traceFlush(start time.Time, try int, batch []outcome, err error) {
	t := c.cfg.Tracer
	if t == nil {
		return
	}
	_, span := t.Start(context.Background(), tracing.SpanComplete, trace.WithTimestamp(start), trace.WithAttributes(
		tracing.Results.Int(len(batch)), tracing.Try.Int(try)))
	if span.IsRecording() {
		links := 0
		for i := range batch {
			if links == tracing.MaxLinks {
				break
			}
			if sc := batch[i].span; sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc})
				links++
			}
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "recording the batch failed")
		}
	}
	span.End()
}
