// Package sendertest holds what tests of packages that send need to know
// about the sender.
package sendertest

import "go.uber.org/goleak"

// IgnoreCleaners are goleak options for the HTTP client's pool cleaners:
// one goroutine per client and one per receiver host, which end on their
// own once the host's connections have been idle for a while (up to 90 s
// after Sender.Close), not when the test does.
var IgnoreCleaners = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
}
