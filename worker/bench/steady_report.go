package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// print writes the report of a run that is not a soak; fanout is the
// deliveries per event.
func (r *SteadyReport) print(out io.Writer, fanout int) {
	fmt.Fprintf(out, "  events queued       %8d  (%d deliveries; %d more events in the warm-up)\n", r.Events, r.Deliveries, r.WarmupEvents)
	fmt.Fprintf(out, "  achieved rate       %8.0f events/s  (%.0f deliveries/s; asked %d)\n", r.AchievedRate, r.AchievedRate*float64(fanout), r.Rate)
	fmt.Fprintf(out, "  enqueue → 1st attempt  %s\n", r.EnqueueToAttempt)
	fmt.Fprintf(out, "    ingest: created_at to the commit's return  %s\n", r.EnqueueToCommit)
	fmt.Fprintf(out, "    worker: the commit's return to the attempt  %s\n", r.CommitToAttempt)
	fmt.Fprintf(out, "  ingest call, each batch from the call to the commit's return  %s\n", strings.Replace(r.IngestCall.String(), "deliveries)", "batches)", 1))
	fmt.Fprintf(out, "  ingest → receipt       %s\n", r.IngestToReceipt)
	rises := 0
	for i := 1; i < len(r.Backlog); i++ {
		if r.Backlog[i] > r.Backlog[i-1] {
			rises++
		}
	}
	grew := fmt.Sprintf("rose in %d of %d seconds: ", rises, max(len(r.Backlog)-1, 0))
	if r.BacklogGrew {
		grew += "GREW, the worker fell behind this rate"
	} else {
		grew += "no steady growth"
	}
	fmt.Fprintf(out, "  backlog (undelivered, each second) first %d, max %d, last %d: %s\n", r.BacklogFirst, r.BacklogMax, r.BacklogLast, grew)
	fmt.Fprintf(out, "    each second: %s\n", joinInts(r.Backlog))
	fmt.Fprintf(out, "  sent each second (requests/s) min %d, max %d: %s\n", r.SendsMin, r.SendsMax, joinInts(r.Sends))
	fmt.Fprintf(out, "  drained %.1f s after the last post", r.Drain.Seconds())
	if len(r.DrainSends) > 0 {
		fmt.Fprintf(out, "; requests/s meanwhile: %s", joinInts(r.DrainSends))
	}
	fmt.Fprintln(out)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

func backlogGrew(samples []int, perSecond int) bool {
	if len(samples) < 2 || samples[len(samples)-1] <= samples[0]+perSecond {
		return false
	}
	rises := 0
	for i := 1; i < len(samples); i++ {
		if samples[i] > samples[i-1] {
			rises++
		}
	}
	return 4*rises >= 3*(len(samples)-1)
}
