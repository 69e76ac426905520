-- +goose Up
-- Latency samples of attempts recorded but not yet merged into
-- latency_histograms: one row per completion batch, written in the batch's
-- own transaction, so a crash between an attempt and the next histogram
-- flush loses no sample. The flush (any replica) merges rows and deletes
-- them in one transaction. Each array index is one endpoint-minute
-- histogram in the latency package's binary encoding.
CREATE TABLE latency_pending (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_ids bigint[]      NOT NULL,
    minutes      timestamptz[] NOT NULL,
    histograms   bytea[]       NOT NULL,
    created_at   timestamptz   NOT NULL DEFAULT now()
);
