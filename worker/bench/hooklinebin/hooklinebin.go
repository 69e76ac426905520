// Package hooklinebin builds the hookline binary for tests that run it as
// a process of its own (the crash, signal and CLI tests, and the bench's
// deployed topology).
package hooklinebin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// Path returns the hookline binary built from this module, built once per
// test binary. It lives in a directory per user and checkout and is
// renamed into place, so concurrent runs (go test runs packages at once)
// never execute a half-written file and no copy accumulates per run.
func Path(t testing.TB) string {
	t.Helper()
	build.once.Do(func() { build.path, build.err = buildHookline() })
	if build.err != nil {
		t.Fatalf("build hookline: %v", build.err)
	}
	return build.path
}

func buildHookline() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the hookline module")
	}
	root := filepath.Dir(mod)
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("hookline-testbin-%d-%s", os.Getuid(), hex.EncodeToString(sum[:4])))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("hookline.%d.tmp", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	bin := filepath.Join(dir, "hookline")
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}
