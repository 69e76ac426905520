package latency

import "time"

// Rows are latency_histograms rows in column arrays, for one unnest: the
// one place a histogram becomes its stored columns (count, ok and failed
// counts, sum, P50/P95/P99, the encoded buckets). The worker's flush and
// the demo's backfill both build them. The field names and order are
// those of the db package's write parameters, so a Rows converts to them
// (db.LatencySlotsWriteParams(r)), and a change to either that drifts
// from the other stops compiling.
type Rows struct {
	EndpointIds  []int64
	Resolutions  []int32
	BucketStarts []time.Time
	Counts       []int64
	OkCounts     []int64
	FailCounts   []int64
	SumsMs       []float64
	P50sMs       []float64
	P95sMs       []float64
	P99sMs       []float64
	Buckets      [][]byte
}

// Add appends h as the row of endpointID's bucket that starts at start,
// at the resolution of resolutionSeconds.
func (r *Rows) Add(endpointID int64, resolutionSeconds int32, start time.Time, h *Histogram) error {
	enc, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	r.EndpointIds = append(r.EndpointIds, endpointID)
	r.Resolutions = append(r.Resolutions, resolutionSeconds)
	r.BucketStarts = append(r.BucketStarts, start)
	r.Counts = append(r.Counts, h.Count())
	r.OkCounts = append(r.OkCounts, h.OK())
	r.FailCounts = append(r.FailCounts, h.Fail())
	r.SumsMs = append(r.SumsMs, Ms(h.Sum()))
	r.P50sMs = append(r.P50sMs, Ms(h.Quantile(0.50)))
	r.P95sMs = append(r.P95sMs, Ms(h.Quantile(0.95)))
	r.P99sMs = append(r.P99sMs, Ms(h.Quantile(0.99)))
	r.Buckets = append(r.Buckets, enc)
	return nil
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.EndpointIds) }
