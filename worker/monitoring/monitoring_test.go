package monitoring

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/rules.yml from Rules")

// promtool finds Prometheus's promtool (Debian: apt-get install
// prometheus). Without it the test fails in CI and is skipped elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool is required in CI: install it (apt-get install prometheus) so that promtool is on PATH")
	}
	t.Skip("promtool not found (apt-get install prometheus)")
	return ""
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRulesFileIsCurrent keeps testdata/rules.yml, which the unit tests
// load, equal to what "hookline monitoring prometheus-rules" prints
// (go test ./worker/monitoring -run TestRulesFileIsCurrent -update
// rewrites it).
func TestRulesFileIsCurrent(t *testing.T) {
	got, err := RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "rules.yml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what Rules generates; rerun with -update, then make rules_test.yml true again", path)
	}
}

// TestRulesCheck: promtool accepts the generated file.
func TestRulesCheck(t *testing.T) {
	b, err := RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "rules.yml")
}

// TestRulesUnitTests runs the alerts' unit tests against the generated
// rules: each fires when it should and stays quiet when it should not.
func TestRulesUnitTests(t *testing.T) {
	runPromtool(t, "testdata", "test", "rules", "rules_test.yml")
}

// TestRulesUnitTestsCoverEveryAlert: every rule (alert and severity) has a
// unit test in which it fires, and every alert one in which it is quiet.
func TestRulesUnitTestsCoverEveryAlert(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rules_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []struct {
					ExpLabels map[string]string `yaml:"exp_labels"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) == 0 {
				quiet[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				fires[a.Alertname+"/"+e.ExpLabels["severity"]] = true
			}
		}
	}
	for _, g := range Rules().Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert+"/"+r.Labels["severity"]] {
				t.Errorf("%s (%s): no unit test in which it fires", r.Alert, r.Labels["severity"])
			}
			if !quiet[r.Alert] {
				t.Errorf("%s: no unit test in which it stays quiet", r.Alert)
			}
		}
	}
}

// TestDashboardQueriesParse: promtool parses every panel's query (the
// dashboard's variables replaced as Grafana would).
func TestDashboardQueriesParse(t *testing.T) {
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$endpoint", ".*")
	var recs []map[string]string
	for i, p := range Panels() {
		for _, tg := range p.Targets {
			recs = append(recs, map[string]string{"record": fmt.Sprintf("hookline:panel_%d_%s", i, tg.RefID), "expr": vars.Replace(tg.Expr)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []map[string]any{{"name": "panels", "rules": recs}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "panels.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "panels.yml")
}

// TestDashboardLayout: unique ids, every panel inside the 24-column grid
// and clear of the others, every query with a ref id and the data source.
func TestDashboardLayout(t *testing.T) {
	panels := Panels()
	ids := map[int]bool{}
	taken := map[[2]int]string{}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.X < 0 || g.W < 1 || g.X+g.W > 24 || g.H < 1 {
			t.Errorf("%q outside the grid: %+v", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[[2]int{x, y}]; ok {
					t.Fatalf("%q overlaps %q at %d,%d", p.Title, other, x, y)
				}
				taken[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource == nil {
			t.Errorf("%q: no query or no data source", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || tg.Datasource == nil {
				t.Errorf("%q: query without ref id or data source", p.Title)
			}
		}
	}
	b, err := Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Throughput", "Queue depth", "P50 / P95 / P99", "Breaker states", "Dead letters", "Failure budget"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("no %q panel", want)
		}
	}
}

// metricName finds the metric names in a query: hookline's, and the Go
// and process collectors'.
var metricName = regexp.MustCompile(`\b(?:hookline|go|process)_[a-z0-9_]+`)

// TestQueriesUseDefinedMetrics: every hookline metric a rule or panel
// reads is one of All (a histogram by its series). TestMetricsReferenced
// (package main) checks the same against what the process exports.
func TestQueriesUseDefinedMetrics(t *testing.T) {
	defined := map[string]bool{}
	for _, m := range All {
		defined[m.Name] = true
		if m.Kind == Histogram {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				defined[m.Name+s] = true
			}
		}
	}
	seen := 0
	for _, q := range Queries() {
		for _, name := range metricName.FindAllString(q, -1) {
			seen++
			if strings.HasPrefix(name, "hookline_") && !defined[name] {
				t.Errorf("%s, in %q, is not a defined metric", name, q)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d metric names found in the queries", seen)
	}
	names := make([]string, len(All))
	for i, m := range All {
		names[i] = m.Name
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != len(All) {
		t.Fatal("a metric is defined twice")
	}
}
