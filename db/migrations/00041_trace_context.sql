-- +goose Up
-- OpenTelemetry traces (worker/tracing). trace_context is the W3C trace
-- context of the request that ingested an event (its traceparent, then a
-- space and its tracestate): every attempt's span, in whichever worker
-- process, is a child of that request's span. Null when traces were off at
-- ingest, so ingest with traces off writes what it wrote before. Adding a
-- nullable column rewrites no partition.
ALTER TABLE events ADD COLUMN trace_context text;

-- send_traceparent: each attempt to the endpoint carries a traceparent
-- header naming its span, so the receiver's trace joins the event's. Off
-- by default: a partner's server is not told about hookline's traces
-- unless the operator asks.
ALTER TABLE endpoints ADD COLUMN send_traceparent boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE endpoints DROP COLUMN send_traceparent;
ALTER TABLE events DROP COLUMN trace_context;
