package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process of the deployed topology: hookline web, hookline
// worker or the receiver, started from the hookline executable.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string        // its stderr (and stdout, unless captured)
	done    chan struct{} // closed once it has exited and been reaped
	err     error         // Wait's result, once done is closed
}

// children are the processes a bench started, stopped in reverse order.
type children struct{ list []*child }

// start runs exe with args and env; its stderr goes to DIR/NAME.log, its
// stdout there too unless stdout is given. The child gets a process group
// of its own (a Ctrl-C reaches the bench alone, which stops the children
// in order) and SIGTERM should the bench die without stopping it.
func (k *children) start(exe string, env []string, dir, name string, stdout io.Writer, args ...string) (*child, error) {
	c := &child{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(c.logPath)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor of the log once started.
	defer logf.Close()
	c.cmd = exec.Command(exe, args...)
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = env, logf, logf
	if stdout != nil {
		c.cmd.Stdout = stdout
	}
	c.cmd.SysProcAttr = childAttr()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start hookline %s: %w", name, err)
	}
	k.list = append(k.list, c)
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stopAll stops every child still running, last started first, and
// returns what went wrong with any of them.
func (k *children) stopAll() error {
	var errs []error
	for i := len(k.list) - 1; i >= 0; i-- {
		errs = append(errs, k.list[i].stop())
	}
	k.list = nil
	return errors.Join(errs...)
}

// stop sends SIGTERM and waits for the exit; a child still running
// childStopWait later is killed with its process group. An exit other
// than status 0 is an error, with the end of the child's log.
func (c *child) stop() error {
	select {
	case <-c.done:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(childStopWait):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
			return fmt.Errorf("hookline %s still running %s after SIGTERM: killed%s", c.name, childStopWait, c.logTail())
		}
	}
	if c.err != nil {
		return fmt.Errorf("hookline %s: %w%s", c.name, c.err, c.logTail())
	}
	return nil
}

// cpu is the child's CPU time (user + system) so far.
func (c *child) cpu() (time.Duration, bool) {
	_, ticks, ok := procTimes("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/stat")
	return time.Duration(ticks) * time.Second / clockTicks, ok
}

// waitLine waits until the child has printed a line starting with prefix
// on out and returns the rest of it.
func (c *child) waitLine(ctx context.Context, out *lockedBuffer, prefix string) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := out.String()
		complete := s[:strings.LastIndexByte(s, '\n')+1] // a line still being written is left for later
		for _, line := range strings.Split(complete, "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSpace(rest), nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.done:
			return "", fmt.Errorf("hookline %s exited during start: %v%s", c.name, c.err, c.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("hookline %s printed no %q line within 30 s%s", c.name, prefix, c.logTail())
		}
	}
}

func (c *child) logTail() string { return logTail(c.logPath) }

// logTail is the end of a child's log, to explain its failure.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return "\n" + string(bytes.TrimRight(b, "\n"))
}

// lockedBuffer collects a child's output, which exec copies in from a
// goroutine of its own while the bench reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// apiClient calls the web process's API with an API key.
type apiClient struct {
	base, key string
	hc        *http.Client
}

// waitReady waits until web answers /readyz with 200.
func (a *apiClient) waitReady(ctx context.Context, web *child) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := a.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-web.done:
			return fmt.Errorf("hookline web exited during start: %v%s", web.err, web.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hookline web not ready within 60 s%s", web.logTail())
		}
	}
}

// call sends in as JSON and decodes the answer into out (when not nil),
// which must have status want.
func (a *apiClient) call(ctx context.Context, method, path string, in any, want int, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	body, err := a.do(ctx, method, path, b, want)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(body, out)
}

func (a *apiClient) do(ctx context.Context, method, path string, in []byte, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, resp.StatusCode, want, body)
	}
	return body, nil
}

// postBatches posts the batch bodies from ingestClients clients at once;
// every event must be accepted.
func (a *apiClient) postBatches(ctx context.Context, bodies [][]byte) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan []byte)
	var wg sync.WaitGroup
	for range ingestClients {
		wg.Go(func() {
			for body := range next {
				if err := a.postBatch(ctx, body); err != nil {
					cancel(err)
				}
			}
		})
	}
	for _, b := range bodies {
		select {
		case next <- b:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

func (a *apiClient) postBatch(ctx context.Context, body []byte) error {
	if ctx.Err() != nil {
		return nil
	}
	b, err := a.do(ctx, "POST", "/api/v1/events/batch", body, http.StatusAccepted)
	if err != nil {
		return err
	}
	var res struct {
		Accepted int `json:"accepted"`
		Rejected int `json:"rejected"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	if res.Rejected > 0 {
		return fmt.Errorf("batch: %d events rejected: %.300s", res.Rejected, b)
	}
	return nil
}

// sinkCount asks the receiver process how many requests it has answered.
func (a *apiClient) sinkCount(ctx context.Context, sinkURL string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", sinkURL+receiverCountPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("receiver count: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("receiver count: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("receiver count %q: %w", b, err)
	}
	return n, nil
}
