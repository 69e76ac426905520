package bench

// Imports alike child.go's: both start and talk to the deployed topology's processes.
import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// processEnv is the environment of every child: nothing from the caller's
// shell but PATH, HOME and TMPDIR, so that nothing there changes what is
// measured, and fresh keys shared by web and worker.
func processEnv(dsn, addr, dir string, o Options, batch, payloadBytes int) ([]string, error) {
	keys := make([]string, 2)
	for i := range keys {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		keys[i] = base64.StdEncoding.EncodeToString(k)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
		"DATABASE_URL=" + dsn,
		"HOOKLINE_SECRET_KEY=" + keys[0],
		"HOOKLINE_SESSION_KEY=" + keys[1],
		"HOOKLINE_ADDR=" + addr,
		// Web and worker run side by side: neither opens a metrics listener.
		"HOOKLINE_METRICS_ADDR=off",
		// The SSRF guard refuses loopback unless allowed: the receiver is there.
		"HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8",
		"HOOKLINE_WORKER_CONCURRENCY=" + strconv.Itoa(o.Concurrency),
		"HOOKLINE_DATA_DIR=" + filepath.Join(dir, "data"),
	}
	// A batch is sized to the default limit; only a payload too big for
	// it alone raises the limit.
	if need := batch*(payloadBytes+64) + 1024; need > defaultBodyLimit {
		env = append(env, "HOOKLINE_MAX_BODY_BYTES="+strconv.Itoa(min(need, 64<<20)))
	}
	// The Go runtime's settings this process runs with (hookline's
	// steady monitor period, or an operator's own), so that every part
	// of the topology runs with the same.
	if v, ok := os.LookupEnv("GODEBUG"); ok {
		env = append(env, "GODEBUG="+v)
	}
	// Traces as the caller asks (OTEL_*), so that the cost of tracing is
	// measured by setting the standard variables on the bench command.
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env, nil
}

// freeLoopbackAddr is a loopback address with a port nobody listens on,
// below the kernel's ephemeral range (32768-60999 on Linux): a port from
// that range can be taken as the source port of an outgoing connection
// (the bench makes thousands) before the process started on it binds it.
func freeLoopbackAddr() (string, error) {
	var err error
	for range 200 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+mrand.IntN(12000))); err == nil {
			defer ln.Close()
			return ln.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("no free loopback port between 20000 and 32000: %w", err)
}

// createAPIKey runs hookline apikey create, as an operator would, and
// returns the key it prints last.
func createAPIKey(ctx context.Context, exe string, env []string, dir string) (string, error) {
	var stdout bytes.Buffer
	logPath := filepath.Join(dir, "apikey.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, exe, "apikey", "create", "--name", "bench")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hookline apikey create: %w%s", err, logTail(logPath))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// batchBodies are the batch requests queueing events events, batch at a
// time, built before the clock starts.
func batchBodies(events, batch int, payload []byte) [][]byte {
	var bodies [][]byte
	for done := 0; done < events; done += batch {
		var b bytes.Buffer
		b.WriteString(`{"events":[`)
		for i := range min(batch, events-done) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"type":"conversion.approved","payload":`)
			b.Write(payload)
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		bodies = append(bodies, b.Bytes())
	}
	return bodies
}

// createEndpoints creates the partner and o.Endpoints webhook endpoints on
// the receiver through the API, as the in-process seed does in SQL.
func createEndpoints(ctx context.Context, api *apiClient, sinkURL string, o Options) error {
	var partner struct {
		ID int64 `json:"id"`
	}
	if err := api.call(ctx, "POST", "/api/v1/partners", map[string]any{"name": "bench"}, http.StatusCreated, &partner); err != nil {
		return fmt.Errorf("create partner: %w", err)
	}
	for i := range o.Endpoints {
		in := map[string]any{
			"partner_id": partner.ID, "name": fmt.Sprint("ep", i), "kind": "webhook",
			"url": fmt.Sprintf("%s/ep%d", sinkURL, i), "max_attempts": 5, "timeout_ms": 15000,
			"max_in_flight": min(1000, max(8, 2*o.Concurrency/o.Endpoints)), "failure_threshold": 10,
		}
		if o.Filter {
			in["filter"] = json.RawMessage(benchFilter(i))
		}
		if err := api.call(ctx, "POST", "/api/v1/endpoints", in, http.StatusCreated, nil); err != nil {
			return fmt.Errorf("create endpoint %d: %w", i, err)
		}
	}
	return nil
}
