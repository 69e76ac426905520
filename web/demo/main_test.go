package demo

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/sender/sendertest"
)

// The demo starts receivers, a streamer and a worker; all must stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, sendertest.IgnoreCleaners...)
}
