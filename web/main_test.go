package web

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/sender/sendertest"
)

// The server, its throttles and the test workers start goroutines; each
// must be gone when its test ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, sendertest.IgnoreCleaners...)
}
