package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/worker/tracing"
)

// traceClaim records one claim (started at start, with room for asked
// rows, everywhere or at named endpoints) as a span linked to the traces
// of the events it claimed: a claim serves many traces, so it is none's
// child.
func (c *claimer) traceClaim(start time.Time, asked int, everywhere bool, rows []claimed, err error) {
	t := c.cfg.Tracer
	if t == nil {
		return
	}
	_, span := t.Start(context.Background(), tracing.SpanClaim, trace.WithTimestamp(start), trace.WithAttributes(
		tracing.Asked.Int(asked), tracing.Deliveries.Int(len(rows)), tracing.Everywhere.Bool(everywhere)))
	if span.IsRecording() {
		links := 0
		for i := range rows {
			if links == tracing.MaxLinks {
				break
			}
			if sc := tracing.Resumed(rows[i].TraceContext); sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc})
				links++
			}
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "claim failed")
		}
	}
	span.End()
}
