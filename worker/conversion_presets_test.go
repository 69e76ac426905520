package worker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hookline/hookline/worker/postback"
)

// TestConversionPresets: 100 conversions go pending → approved → approved
// (again) → declined through a running worker to Everflow, Voluum, CAKE,
// TUNE and RedTrack, each endpoint set up as an operator would (the
// preset, a value map, fire_on "change"), and each fake tracker
// (statusTrackers) records exactly what it should:
//
//   - TUNE and RedTrack take a status in the postback: pending, approved,
//     then the reversal (rejected, declined), once each; the repeated
//     approval is suppressed.
//   - Everflow and Voluum take none: a postback records a conversion, and
//     status changes are calls of their own API. The operator sends only
//     approvals, carrying the status in a free parameter the tracker
//     documents (Everflow adv1, Voluum param1) whose map knows only
//     "approved", with unmapped "skip": one conversion each, the pending
//     and the rejection skipped (recorded as unmapped_value), the repeat
//     suppressed. The rejection must reach them through their API.
//   - CAKE documents no free postback parameter that could carry the
//     status, so every change is sent and CAKE records three postbacks
//     for each conversion: the operator adjusts pending and rejected ones
//     with CAKE's conversion update API.
func TestConversionPresets(t *testing.T) {
	t.Parallel()
	const n = 100
	e := newEnv(t)
	rcv := newReceiver(t)
	trackers := newStatusTrackers()
	rcv.setHandler(trackers.handler)

	approvalsOnly := conversionRules()
	approvalsOnly.ValueMaps = map[string]map[string]string{"status": {"approved": "approved"}}
	approvalsOnly.Unmapped = postback.UnmappedSkip
	redtrack := conversionRules()
	redtrack.ValueMaps = map[string]map[string]string{"status": {"approved": "approved", "pending": "pending", "declined": "declined"}}

	e.operatorEndpoint(rcv.URL+"/everflow", "everflow", approvalsOnly, "&adv1={status}")
	e.operatorEndpoint(rcv.URL+"/voluum", "voluum", approvalsOnly, "&param1={status}")
	e.operatorEndpoint(rcv.URL+"/cake", "cake", conversionRules(), "")
	e.operatorEndpoint(rcv.URL+"/tune", "tune", conversionRules(), "")
	e.operatorEndpoint(rcv.URL+"/redtrack", "redtrack", redtrack, "&status={status}")
	e.run(e.worker(nil))
	e.conversionWaves(n, 5)

	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	for name, refused := range trackers.refused {
		if refused != 0 {
			t.Errorf("%s refused %d postbacks", name, refused)
		}
	}
	for _, tc := range []struct {
		tracker string
		key     func(i int) string
		want    func(i int) []string
	}{
		{"everflow", clickKey, always("conversion")},
		{"voluum", clickKey, func(i int) []string { return []string{fmt.Sprintf("txid=tx-%d", i)} }},
		{"cake", clickKey, always("conversion", "conversion", "conversion")},
		{"tune", clickKey, always("pending", "approved", "rejected")},
		{"redtrack", clickKey, always("pending", "approved", "declined")},
	} {
		got := trackers.seen[tc.tracker]
		if len(got) != n {
			t.Errorf("%s recorded %d conversions, want %d", tc.tracker, len(got), n)
		}
		wrong := 0
		for i := range n {
			if seq, want := got[tc.key(i)], tc.want(i); !slices.Equal(seq, want) {
				if wrong++; wrong <= 3 {
					t.Errorf("%s: conversion %s went %v, want %v", tc.tracker, tc.key(i), seq, want)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d conversions recorded wrongly", tc.tracker, wrong, n)
		}
	}
	// The repeated approval, for every tracker.
	if s := e.count("SELECT count(*) FROM deliveries WHERE last_error_class = 'suppressed'"); s != 5*n {
		t.Errorf("%d suppressed deliveries, want %d", s, 5*n)
	}
	// Everflow's and Voluum's pending and rejection.
	if s := e.count("SELECT count(*) FROM deliveries WHERE last_error_class = $1", classUnmapped); s != 2*2*n {
		t.Errorf("%d deliveries skipped as unmapped, want %d", s, 2*2*n)
	}
}

func clickKey(i int) string { return fmt.Sprintf("click-%d", i) }

func always(seq ...string) func(int) []string { return func(int) []string { return seq } }
