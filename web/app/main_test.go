package app

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestMain fails the package when a test leaves a goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, sendertest.IgnoreCleaners...)
}
