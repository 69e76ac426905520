// Package verifytest runs the official Standard Webhooks verifier (the npm
// standardwebhooks package, pinned in worker/signing/testdata/verify) for
// tests: receivers using that library must accept what hookline sends. It
// is imported by tests only.
package verifytest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Case is one input for verify.mjs.
type Case struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Result is verify.mjs's answer for one case.
type Result struct {
	Accepted bool   `json:"accepted"`
	Error    string `json:"error"`
}

// dir holds package.json, package-lock.json and verify.mjs; its
// node_modules is installed by CI (npm ci), never committed.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "verify")
}

// Require returns the node binary, or skips the test on a developer
// machine without the verifier installed. In CI a missing verifier fails
// the test: a silent skip there would hide a broken install step.
func Require(t testing.TB) string {
	t.Helper()
	const hint = "run `npm ci --prefix worker/signing/testdata/verify` from the repository root"
	problem := ""
	node, err := exec.LookPath("node")
	if err != nil {
		problem = "node is not on PATH (install Node.js 18 or later)"
	} else if _, err := os.Stat(filepath.Join(dir(), "node_modules", "standardwebhooks", "package.json")); err != nil {
		problem = "the official verifier is not installed in worker/signing/testdata/verify/node_modules"
	}
	if problem == "" {
		return node
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; %s (CI must run the official verifier test, not skip it)", problem, hint)
	}
	t.Skipf("%s; %s", problem, hint)
	return ""
}

var mu sync.Mutex // one node process at a time: parallel tests share the machine

// Run verifies the cases with the official library and returns one result
// per case.
func Run(t testing.TB, node string, cases []Case) []Result {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	input, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify.mjs")
	cmd.Dir = dir()
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	var results []Result
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("decode verify.mjs output %q: %v", out, err)
	}
	if len(results) != len(cases) {
		t.Fatalf("verify.mjs returned %d results for %d cases", len(results), len(cases))
	}
	return results
}
