package worker

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, sendertest.IgnoreCleaners...)
}
