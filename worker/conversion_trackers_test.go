package worker

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// statusTrackers are fake Everflow, Voluum, CAKE, TUNE and RedTrack
// servers, each under its own path prefix (/everflow, /voluum, …), that
// parse a postback the way the tracker documents it and keep, per
// conversion, what they recorded, in order. Where a tracker's behaviour
// could not be confirmed from its documentation the comment says so, and
// the fake takes the plainest reading.
//
//   - Everflow (helpdesk.everflow.io, "Accessing & Editing S2S Postback
//     URLs"): nid and transaction_id (Everflow's click id) are required;
//     amount and adv1…adv5 are optional. A conversion's status (approved,
//     rejected) is changed through the Network API, PATCH
//     /v1/networks/reporting/conversions (developers.everflow.io,
//     "Conversion Updates"), never by a postback. Not confirmed: the text
//     Everflow answers, and whether it drops a second postback for the same
//     transaction_id; the fake records every one.
//   - Voluum (doc.voluum.com, "Parameters in Postback URLs" and "Track
//     Conversions Using S2S Postback URL"): GET /postback with cid
//     (required), payout, txid, currency, et and param1…param5 (optional).
//     "Upselling: Tracking Subsequent Conversions": a repeated cid is
//     discarded unless its txid is new, and the same cid and txid count
//     once. Voluum takes no status in a postback. Not confirmed: the text
//     it answers; the fake answers 200 with an empty body.
//   - CAKE (support.getcake.com, "How to Implement Server-to-Server
//     Tracking Using a Postback URL"): the request (session) id comes back
//     in r, required; status changes go through CAKE's conversion update
//     API. Not confirmed: the p.ashx path and the t (transaction) parameter
//     of the preset, the answer text and CAKE's handling of a repeated r;
//     the fake records every postback with an r.
//   - TUNE (support.tune.com, "Receiving Conversions via Postback URL"):
//     GET aff_lsr with transaction_id (TUNE's click id); TUNE answers
//     "success=true;" when it records the conversion and "success=false;
//     err_msg=…;" otherwise, e.g. "Invalid Trans. ID" or "Duplicate
//     conversion". Not confirmed: a status parameter on aff_lsr (the
//     preset sends approved, pending or rejected in status; TUNE's
//     conversion statuses are those words); the fake takes a status change
//     for a known transaction_id as an update and the same status again as
//     a duplicate.
//   - RedTrack (help.redtrack.io, "Dynamic parameters: clickid",
//     "Conversion tracking: types, statuses, duplicates", "Conditional
//     postback"): GET /postback with clickid (required); type names a
//     conversion type set up in RedTrack (case-sensitive); the statuses are
//     approved, pending, declined and other; a duplicate postback for a
//     clickid is handled per the account's duplicate mode, here "edit
//     conversion with new data". Not confirmed: that the status parameter
//     is named status, that the revenue parameter is sum, and the answer
//     text.
//
// A postback missing a required parameter or with a status word the
// tracker does not know is refused and not recorded.
type statusTrackers struct {
	mu   sync.Mutex
	seen map[string]map[string][]string // tracker → conversion key → what it recorded
	// refused counts postbacks a tracker turned down, per tracker.
	refused map[string]int
}

func newStatusTrackers() *statusTrackers {
	f := &statusTrackers{seen: map[string]map[string][]string{}, refused: map[string]int{}}
	for _, name := range []string{"everflow", "voluum", "cake", "tune", "redtrack"} {
		f.seen[name] = map[string][]string{}
	}
	return f
}

func (f *statusTrackers) handler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	refuse := func(code int, answer string) {
		f.refused[name]++
		w.WriteHeader(code)
		_, _ = w.Write([]byte(answer))
	}
	record := func(key, what string) { f.seen[name][key] = append(f.seen[name][key], what) }
	switch name + " /" + path {
	case "everflow /":
		if q.Get("nid") == "" || q.Get("transaction_id") == "" {
			refuse(http.StatusBadRequest, "nid and transaction_id are required")
			return
		}
		record(q.Get("transaction_id"), "conversion")
	case "voluum /postback":
		cid := q.Get("cid")
		if cid == "" {
			refuse(http.StatusBadRequest, "cid is required")
			return
		}
		// The same cid and txid count once; Voluum drops the repeat.
		if seen := f.seen[name][cid]; len(seen) > 0 && slices.Contains(seen, "txid="+q.Get("txid")) {
			record(cid, "duplicate")
			return
		}
		record(cid, "txid="+q.Get("txid"))
	case "cake /p.ashx":
		if q.Get("r") == "" {
			refuse(http.StatusBadRequest, "r is required")
			return
		}
		record(q.Get("r"), "conversion")
	case "tune /aff_lsr":
		tid, st := q.Get("transaction_id"), q.Get("status")
		if tid == "" {
			refuse(http.StatusOK, "success=false; err_msg=Invalid Trans. ID #"+tid+".;")
			return
		}
		if !slices.Contains([]string{"approved", "pending", "rejected"}, st) {
			refuse(http.StatusOK, "success=false; err_msg=Invalid status.;")
			return
		}
		if seen := f.seen[name][tid]; len(seen) > 0 && seen[len(seen)-1] == st {
			refuse(http.StatusOK, "success=false; err_msg=Duplicate conversion.;")
			return
		}
		record(tid, st)
		_, _ = w.Write([]byte("success=true;"))
	case "redtrack /postback":
		if q.Get("clickid") == "" || !slices.Contains([]string{"approved", "pending", "declined", "other", ""}, q.Get("status")) {
			refuse(http.StatusBadRequest, "clickid and a known status are required")
			return
		}
		record(q.Get("clickid"), q.Get("status"))
	default:
		http.NotFound(w, r)
	}
}
