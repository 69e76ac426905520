package web

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// The server, its throttles and the test workers start goroutines; each
// must be gone when its test ends.
// The shared Chromium is stopped first: its goroutines are the package's,
// not a test's.
// Passwords are hashed at bcrypt's minimum cost (account.UseMinCost): at
// the production cost each provisioned or added user and each sign-in
// with an unknown email took seconds under the race detector.
func TestMain(m *testing.M) {
	account.UseMinCost()
	code := m.Run()
	stopChromium()
	if code == 0 {
		if err := goleak.Find(sendertest.IgnoreCleaners...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
