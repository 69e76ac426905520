package main

// Tests of the generated monitoring: the commands print what the package
// generates without reading the configuration, every metric the rules and
// the dashboard read is one the process exports, and a real Prometheus
// scraping a running hookline loads the rules, evaluates them without
// error and raises the alert of a condition made on purpose.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/monitoring"
)

// TestMonitoringCommands: both commands print exactly what the package
// generates, with a configuration that would stop any other command, and
// start nothing.
func TestMonitoringCommands(t *testing.T) {
	t.Parallel()
	dir := emptyDataDir(t)
	env := map[string]string{"HOOKLINE_DATA_DIR": dir, "HOOKLINE_ADDR": ":99999"}
	for cmd, generate := range map[string]func() ([]byte, error){
		"prometheus-rules":  monitoring.RulesYAML,
		"grafana-dashboard": monitoring.Dashboard,
	} {
		out, err := runCLI(env, "monitoring", cmd)
		if err != nil {
			t.Fatalf("monitoring %s: %v", cmd, err)
		}
		want, err := generate()
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Fatalf("monitoring %s printed something else than the generator", cmd)
		}
		requireEmpty(t, dir, "hookline monitoring "+cmd)
	}
	var dash map[string]any
	out, _ := runCLI(env, "monitoring", "grafana-dashboard")
	if err := json.Unmarshal([]byte(out), &dash); err != nil || dash["panels"] == nil {
		t.Fatalf("grafana-dashboard is not a dashboard: %v", err)
	}
}

// monitored is a running "hookline serve" with its metrics listener, an
// API key and a receiver that answers 503.
type monitored struct {
	p           *process
	key         string
	metricsAddr string
	dbURL       string
	endpointID  int64
}

// startMonitored runs hookline with one endpoint whose receiver answers
// 503, whose breaker opens at its first failure.
func startMonitored(t *testing.T) *monitored {
	t.Helper()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(rcv.Close)
	m := &monitored{dbURL: dbtest.URL(t), metricsAddr: freeAddr(t)}
	env := serveEnv(t, m.dbURL)
	env["HOOKLINE_METRICS_ADDR"] = m.metricsAddr
	m.p = start(t, env, "serve")
	m.key = lastLine(command(t, env, "", "apikey", "create", "--name", "monitoring"))
	status, partner := api(t, m.p.addr, m.key, "POST", "/api/v1/partners", map[string]any{"name": "Acme"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, partner)
	}
	status, ep := api(t, m.p.addr, m.key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "down", "kind": "webhook", "url": rcv.URL + "/in", "failure_threshold": 1})
	if status != 201 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	m.endpointID = int64(ep["id"].(float64))
	return m
}

func (m *monitored) event(t *testing.T) {
	t.Helper()
	if status, ev := api(t, m.p.addr, m.key, "POST", "/api/v1/events", map[string]any{"type": "order.created", "payload": map[string]any{}}); status != 202 {
		t.Fatalf("event: %d %v", status, ev)
	}
}

func (m *monitored) breakerState(t *testing.T) string {
	t.Helper()
	status, ep := api(t, m.p.addr, m.key, "GET", fmt.Sprintf("/api/v1/endpoints/%d", m.endpointID), nil)
	if status != 200 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	h, _ := ep["health"].(map[string]any)
	s, _ := h["state"].(string)
	return s
}

// scrapeFamilies reads the metrics listener as Prometheus would.
func scrapeFamilies(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return families
}

// TestMetricsReferenced fails when a rule or a panel reads a metric the
// process does not export, and when a metric defined in worker/monitoring
// is not exported: it scrapes a "hookline serve" (the registry main.go
// builds, with the worker's metrics and the web server's collector) whose
// endpoint has every per-endpoint series.
func TestMetricsReferenced(t *testing.T) {
	m := startMonitored(t)
	conn, err := pgx.Connect(context.Background(), m.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "UPDATE endpoint_health SET p95_ms = 120, recent_p95_ms = 90 WHERE endpoint_id = $1", m.endpointID); err != nil {
		t.Fatal(err)
	}
	families := scrapeFamilies(t, m.metricsAddr)
	exported := map[string]bool{}
	for name, f := range families {
		exported[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[name+s] = true
			}
		}
	}
	for _, d := range monitoring.All {
		f := families[d.Name]
		if f == nil {
			t.Errorf("%s is defined but not exported", d.Name)
			continue
		}
		if want := map[monitoring.Kind]dto.MetricType{monitoring.Counter: dto.MetricType_COUNTER, monitoring.Gauge: dto.MetricType_GAUGE, monitoring.Histogram: dto.MetricType_HISTOGRAM}[d.Kind]; f.GetType() != want {
			t.Errorf("%s is exported as a %s, defined as a %s", d.Name, f.GetType(), d.Kind)
		}
	}
	name := regexp.MustCompile(`\b(?:hookline|go|process)_[a-z0-9_]+`)
	n := 0
	for _, q := range monitoring.Queries() {
		for _, ref := range name.FindAllString(q, -1) {
			n++
			if !exported[ref] {
				t.Errorf("%s, read by %q, is not exported", ref, q)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d metric names found in the rules and panels", n)
	}
}

// prometheusBinary finds Prometheus (Debian: apt-get install prometheus).
// Without it the test fails in CI and is skipped elsewhere.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("prometheus is required in CI: install it (apt-get install prometheus) so that prometheus is on PATH")
	}
	t.Skip("prometheus not found (apt-get install prometheus)")
	return ""
}

// lowLoopbackPort finds a free loopback port below 32768, outside the
// range the kernel hands out for outgoing connections.
func lowLoopbackPort(t *testing.T) int {
	t.Helper()
	for port := 20000 + os.Getpid()%10000; port < 32768; port++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free loopback port below 32768")
	return 0
}

// startPrometheus runs Prometheus on a loopback port with its own data
// directory, scraping target every second and evaluating rules every
// second; it is stopped when the test ends.
func startPrometheus(t *testing.T, target string, rules []byte) string {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: hookline
    static_configs:
      - targets: [%q]
`, target)
	for name, b := range map[string][]byte{"prometheus.yml": []byte(config), "rules.yml": rules} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", lowLoopbackPort(t))
	var logs strings.Builder
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})
	waitUntil(t, 30*time.Second, "prometheus ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", logs.String())
		default:
		}
		res, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return addr
}

// promAPI GETs a Prometheus HTTP API path and decodes its data into out.
func promAPI(t *testing.T, addr, path string, out any) {
	t.Helper()
	res, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("%s: %s %s", path, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	State     string `json:"state"`
	Alerts    []struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	} `json:"alerts"`
}

// TestPrometheusAlertsOnHookline runs a real Prometheus with the generated
// rules against a running hookline: the rules load and evaluate without
// error, the dashboard's queries run, and an endpoint whose receiver
// answers 503 opens its breaker and makes HooklineBreakerOpen pending.
func TestPrometheusAlertsOnHookline(t *testing.T) {
	t.Parallel()
	prometheusBinary(t)
	m := startMonitored(t)
	rules, err := monitoring.RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, m.metricsAddr, rules)

	var want []string
	for _, g := range monitoring.Rules().Groups {
		for _, r := range g.Rules {
			want = append(want, r.Alert)
		}
	}
	var groups struct {
		Groups []struct {
			Name  string     `json:"name"`
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	rules1 := func() []promRule {
		promAPI(t, prom, "/api/v1/rules", &groups)
		var out []promRule
		for _, g := range groups.Groups {
			out = append(out, g.Rules...)
		}
		return out
	}
	waitUntil(t, 30*time.Second, "every rule loaded and evaluated", func() bool {
		got := rules1()
		if len(got) != len(want) {
			return false
		}
		for i, r := range got {
			if r.Name != want[i] {
				t.Fatalf("rule %d is %s, want %s", i, r.Name, want[i])
			}
			if r.LastError != "" || r.Health == "err" {
				t.Fatalf("%s: %s", r.Name, r.LastError)
			}
			if r.Health != "ok" {
				return false
			}
		}
		return true
	})
	var targets struct {
		ActiveTargets []struct {
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	waitUntil(t, 30*time.Second, "hookline scraped", func() bool {
		promAPI(t, prom, "/api/v1/targets", &targets)
		return len(targets.ActiveTargets) == 1 && targets.ActiveTargets[0].Health == "up"
	})

	// The condition: a receiver answering 503 opens the breaker.
	m.event(t)
	waitUntil(t, 30*time.Second, "the breaker open", func() bool { return m.breakerState(t) == "open" })
	id := fmt.Sprint(m.endpointID)
	waitUntil(t, 30*time.Second, "HooklineBreakerOpen pending", func() bool {
		for _, r := range rules1() {
			if r.Name != "HooklineBreakerOpen" {
				continue
			}
			for _, a := range r.Alerts {
				if a.Labels["endpoint_id"] == id && a.Labels["endpoint"] == "down" && (a.State == "pending" || a.State == "firing") {
					return true
				}
			}
		}
		return false
	})
	// Nothing else fires: the database is up, a worker is live, nothing is
	// late, no budget is near. (A rule with a "for" may be pending while
	// the first seconds of a rate are flat; it would fire only minutes on.)
	for _, r := range rules1() {
		for _, a := range r.Alerts {
			if r.Name != "HooklineBreakerOpen" && a.State == "firing" {
				t.Errorf("%s fires on a healthy hookline: %v", r.Name, a.Labels)
			}
		}
	}

	// Every panel's query runs on the real series.
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", "hookline", "$endpoint", ".*")
	for _, p := range monitoring.Panels() {
		for _, tg := range p.Targets {
			var res struct {
				ResultType string `json:"resultType"`
			}
			promAPI(t, prom, "/api/v1/query?query="+url.QueryEscape(vars.Replace(tg.Expr)), &res)
		}
	}
	var up struct {
		Result []struct {
			Value []any `json:"value"`
		} `json:"result"`
	}
	promAPI(t, prom, "/api/v1/query?query="+url.QueryEscape(`hookline_endpoint_breaker_state{job="hookline",state="open"}`), &up)
	if len(up.Result) != 1 {
		t.Fatalf("open breakers in Prometheus: %v", up.Result)
	}
}
