package worker

import (
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// attemptRows are the attempts of a batch's applied results, as the
// parallel arrays AttemptInsertRows takes.
//
// Each array is made once at the batch's size: grown by append, the
// sixteen of them were reallocated a few times each per batch.
func attemptRows(batch []outcome, applied map[int64]bool) db.AttemptInsertRowsParams {
	n := len(batch)
	a := attemptArrays{
		DeliveryIds: make([]int64, 0, n), EndpointIds: make([]int64, 0, n), AttemptNos: make([]int32, 0, n),
		StartedAts: make([]time.Time, 0, n), DurationsMs: make([]float64, 0, n), Outcomes: make([]string, 0, n),
		StatusCodes: make([]int32, 0, n), ErrorClasses: make([]string, 0, n), Errors: make([]string, 0, n),
		ResponseExcerpts: make([]string, 0, n), ResponsePrivates: make([]bool, 0, n),
		EgressProxies: make([]int32, 0, n), TlsMinors: make([]int32, 0, n), TlsResumeds: make([]bool, 0, n),
		ClientCerts: make([]int32, 0, n), Credentials: make([]int32, 0, n), EgressNames: []string{},
	}
	for i := range batch {
		o := &batch[i]
		d, r := &o.d, &o.res
		if !applied[d.ID] || r.ErrorClass == sender.ClassCanceled {
			continue
		}
		a.DeliveryIds = append(a.DeliveryIds, d.ID)
		a.EndpointIds = append(a.EndpointIds, d.EndpointID)
		a.AttemptNos = append(a.AttemptNos, d.AttemptCount+1)
		a.StartedAts = append(a.StartedAts, r.Started)
		a.DurationsMs = append(a.DurationsMs, float64(r.Duration)/float64(time.Millisecond))
		a.Outcomes = append(a.Outcomes, string(r.Outcome))
		a.StatusCodes = append(a.StatusCodes, int32(r.StatusCode))
		a.ErrorClasses = append(a.ErrorClasses, r.ErrorClass)
		a.Errors = append(a.Errors, r.Error)
		a.ResponseExcerpts = append(a.ResponseExcerpts, r.Excerpt)
		// An address only an allow list opened: the portal hides what
		// it answered.
		a.ResponsePrivates = append(a.ResponsePrivates, r.RemoteClass != ssrf.ClassNone && r.RemoteClass != ssrf.ClassPublic)
		// How it left: the proxy, or "direct", only for an attempt that
		// went out; one refused before (a blocked address, a bad request,
		// our own settings) left no way at all.
		var proxy string
		if o.sent() {
			proxy = r.Proxy
			if proxy == "" {
				proxy = proxyDirect
			}
		}
		a.EgressProxies = append(a.EgressProxies, a.name(proxy))
		a.TlsMinors = append(a.TlsMinors, tlsMinor(r.TLSVersion))
		a.TlsResumeds = append(a.TlsResumeds, r.TLSResumed)
		a.ClientCerts = append(a.ClientCerts, a.name(r.ClientCert))
		a.Credentials = append(a.Credentials, a.name(r.Credential))
	}
	return db.AttemptInsertRowsParams(a)
}

// proxyDirect is delivery_attempts.egress_proxy of an attempt that went out
// without a proxy.
const proxyDirect = "direct"

// attemptArrays are AttemptInsertRows' parameters as attemptRows fills
// them.
type attemptArrays db.AttemptInsertRowsParams

// name is v's 1-based place in the batch's EgressNames, added when new; 0
// for "". A batch holds a handful of distinct proxies, subjects and
// credential kinds, and each row sends a small number instead of a
// string, which pgx would box (an allocation a row and column).
func (a *attemptArrays) name(v string) int32 {
	if v == "" {
		return 0
	}
	for i, n := range a.EgressNames {
		if n == v {
			return int32(i + 1)
		}
	}
	a.EgressNames = append(a.EgressNames, v)
	return int32(len(a.EgressNames))
}

// tlsMinor is a TLS version as AttemptInsertRows takes it: its minor
// number plus one (tls.VersionTLS13 is 4), 0 for none.
func tlsMinor(v uint16) int32 {
	if v>>8 != 3 {
		return 0
	}
	return int32(v & 0xff)
}
