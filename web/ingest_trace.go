package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/worker/tracing"
)

// ingestRoutes are the routes whose requests get a span: the ingest.
var ingestRoutes = map[string]bool{"/api/v1/events": true, "/api/v1/events/batch": true}

// traceIngest gives each ingest request (POST /api/v1/events and
// /events/batch) a server span, the child of the producer's span when the
// request carries a W3C traceparent (and tracestate): the producer's trace
// goes on through hookline. Every other request, and every request with
// traces off, passes through untouched.
func (s *Server) traceIngest(next echo.HandlerFunc) echo.HandlerFunc {
	t := s.cfg.Tracer
	if t == nil {
		return next
	}
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost || !ingestRoutes[c.Path()] {
			return next(c)
		}
		ctx := tracing.Extract(req.Context(), req.Header)
		ctx, span := t.Start(ctx, req.Method+" "+c.Path(), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(tracing.HTTPMethod.String(req.Method), tracing.HTTPRoute.String(c.Path())))
		defer span.End()
		c.SetRequest(req.WithContext(ctx))
		err := next(c) // logRequests, inside, answers an error itself
		status := c.Response().Status
		span.SetAttributes(tracing.StatusCode.Int(status))
		if status >= 500 {
			span.SetAttributes(tracing.ErrorType.String(strconv.Itoa(status)))
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return err
	}
}

// storeTraced is storeEvents inside the fan-out's span when traces are on:
// each event stores the trace context of the ingest request's span, the
// parent of its attempts' spans in whichever worker sends them. With
// traces off the events store none, and the insert is as it was.
func (s *Server) storeTraced(ctx context.Context, ok []validated, results []ingestResult) error {
	t := s.cfg.Tracer
	if t == nil {
		return s.storeEvents(ctx, ok, results, nil)
	}
	carried := tracing.Carried(ctx)
	ctx, span := t.Start(ctx, tracing.SpanFanOut)
	defer span.End()
	if carried == nil {
		// An ingest outside the API's routes has no request span: the
		// fan-out is the attempts' parent.
		carried = tracing.Carried(ctx)
	}
	err := s.storeEvents(ctx, ok, results, carried)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "storing the events failed")
		return err
	}
	events, deliveries := 0, 0
	for _, v := range ok {
		if r := results[v.index]; r.Status == ingestAccepted {
			events++
			deliveries += len(r.Deliveries)
		}
	}
	span.SetAttributes(tracing.Events.Int(events), tracing.Deliveries.Int(deliveries))
	return nil
}
