//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// errorRateAnalysis is an analysis of the error ratio the suite's exporter
// publishes for a revision: 3 measurements 2s apart after 3s; below 1%
// passes, 5% or more fails, between is inconclusive.
const errorRateAnalysis = `apiVersion: v1
kind: ConfigMap
metadata:
  name: error-rate
  labels:
    plimsoll.dev/analysis: "true"
data:
  analysis.yaml: |
    metrics:
    - name: ratio
      initialDelay: 3s
      interval: 2s
      count: 3
      successCondition: result < 0.01
      failureCondition: result >= 0.05
      prometheus:
        query: |
          sum(rate(plimsoll_e2e_errors_total{namespace="{{args.namespace}}",workload="{{args.workload}}",hash="{{args.hash}}"}[5s]))
          /
          sum(rate(plimsoll_e2e_requests_total{namespace="{{args.namespace}}",workload="{{args.workload}}",hash="{{args.hash}}"}[5s]))
`

// analysedCanary is examples/canary at version, with steps "25%, 50%,
// 100%" and each step judged by errorRateAnalysis.
func analysedCanary(t *testing.T, version string) map[string]string {
	t.Helper()
	files := canaryExample(t, version, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`,
		`plimsoll.dev/steps: "25%, 50%, 100%"
    plimsoll.dev/analysis: error-rate`)
	files["analysis.yaml"] = errorRateAnalysis
	return files
}

// newHash waits until Deployment name records a revision after previous
// and returns its template hash.
func newHash(t *testing.T, ns, name string, revision int) string {
	t.Helper()
	d := waitForDeployment(t, ns, name, fmt.Sprintf("revision %d recorded", revision), func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/revision"] == fmt.Sprint(revision) && d.Annotations["plimsoll.dev/template-hash"] != ""
	})
	return d.Annotations["plimsoll.dev/template-hash"]
}

// TestAnalysisCanary rolls out two revisions of a canary judged by the
// real Prometheus: one whose canary answers 0.1% errors goes through every
// step; one with 10% fails its first analysed step, and its canary leaves
// the Service's ready endpoints within 2s of the verdict while the stable
// keeps 4 ready endpoints throughout. A third, with the analysis taken
// out of Git, goes through at 10% errors: nothing judges it.
func TestAnalysisCanary(t *testing.T) {
	p := startPrometheus(t)
	s := newSyncTarget(t)
	s.repo.Commit("api v1", analysedCanary(t, "v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s", "--prometheus-url", p.url)
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()

	t.Log("1. revision 2 answers 0.1% errors: every step passes its analysis")
	s.repo.Commit("api v2", analysedCanary(t, "v2"))
	h2 := newHash(t, s.ns, "api", 2)
	p.exporter.set(s.ns, "api", h2, 50, 0.001)
	waitForDeployment(t, s.ns, "api", "step 1 analysed", phaseIs(2, "Progressing", "canary step 1/3", "analysis running"))
	passed := waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	if r := recordedRun(t, passed); r.Verdict != "Successful" || r.Hash != h2 || r.Stage != "step 2" || r.Metrics[0].Successful != 3 {
		t.Errorf("the last run of revision 2: %+v, want step 2 Successful with 3 successful measurements", r)
	}
	if !hasEvent(t, s.ns, "api", "Analysis", "step 1: analysis successful") {
		t.Error("no Analysis Event for step 1's verdict")
	}
	if table, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...); code != 0 ||
		!strings.Contains(table, "analysis step 2 successful: error-rate/ratio successful, 3 successful, last ") {
		t.Errorf("plimsoll status exited %d without the measurements of the last run:\n%s", code, table)
	}
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("revision 2: the Service had %d ready endpoints (%v), want never fewer than 4", n, pods)
	}

	t.Log("2. revision 3 answers 10% errors: it fails at step 1, and its canary leaves the Service at once")
	mark = endpoints.mark()
	s.repo.Commit("api v3", analysedCanary(t, "v3"))
	h3 := newHash(t, s.ns, "api", 3)
	p.exporter.set(s.ns, "api", h3, 50, 0.10)
	failed := waitForDeployment(t, s.ns, "api", "revision 3 Degraded", phaseIs(3, "Degraded", "analysis error-rate/ratio failed"))
	r := recordedRun(t, failed)
	if r.Verdict != "Failed" || r.Stage != "step 1" || r.Metrics[0].Failed != 1 {
		t.Fatalf("the run of revision 3: %+v, want step 1 Failed on one failed measurement", r)
	}
	verdict := r.Metrics[0].At
	t.Logf("verdict at %s on value %s; message: %s", verdict.Format("15:04:05.000"), r.Metrics[0].Value, failed.Annotations["plimsoll.dev/message"])
	endpoints.waitReady(t, "no canary endpoint", func(pods []string) bool { return len(withPrefix(pods, "api-canary-")) == 0 })
	left, _ := endpoints.firstSince(mark, func(pods []string) bool { return len(pods) > 0 && len(withPrefix(pods, "api-canary-")) == 0 })
	if gap := left.Sub(verdict); gap > 2*time.Second {
		t.Errorf("the canary left the Service's endpoints %s after the verdict, want within 2s; history:\n%s",
			gap.Round(time.Millisecond), strings.Join(endpoints.history(mark), "\n"))
	}
	if failed.Annotations["plimsoll.dev/failed-hash"] != h3 {
		t.Errorf("failed-hash %q, want %q", failed.Annotations["plimsoll.dev/failed-hash"], h3)
	}
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	waitForDeployment(t, s.ns, "api", "back at 4", scaledTo(4))
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	// The failure cuts the canary's traffic at once, before the stable is
	// back at 4: the stable's own 3 pods of step 1 serve throughout.
	stablePods := func(pods []string) int { return len(pods) - len(withPrefix(pods, "api-canary-")) }
	if n := endpoints.fewestSince(mark, stablePods); n < 3 {
		t.Errorf("revision 3: the stable had %d ready endpoints, want never fewer than its 3 of step 1; history:\n%s",
			n, strings.Join(endpoints.history(mark), "\n"))
	}
	if got := images(t, s.ns, "app=api", "api-"); !onlyImage(got, 4, "registry.example/api:v2") {
		t.Errorf("pods after the failure run %v, want 4 on v2", got)
	}
	checkMetrics(t, d, `plimsoll_analysis_runs_total{verdict="Failed"} 1`, `plimsoll_analysis_runs_total{verdict="Successful"} 2`)
	waitFor(t, "an Analysis Warning naming the value", func(context.Context) (bool, error) {
		return hasEvent(t, s.ns, "api", "Analysis", "step 1: analysis error-rate/ratio failed: "+r.Metrics[0].Value), nil
	})

	t.Log("3. revision 4 drops the analysis from Git: it answers 10% errors and goes through unjudged")
	unjudged := analysedCanary(t, "v4")
	unjudged["deployment.yaml"] = strings.Replace(unjudged["deployment.yaml"], "\n    plimsoll.dev/analysis: error-rate", "", 1)
	if strings.Contains(unjudged["deployment.yaml"], "plimsoll.dev/analysis") {
		t.Fatal("the analysis is still named in the Deployment")
	}
	s.repo.Commit("api v4 without its analysis", unjudged)
	h4 := newHash(t, s.ns, "api", 4)
	p.exporter.set(s.ns, "api", h4, 50, 0.10)
	healthy := waitForDeployment(t, s.ns, "api", "revision 4 Healthy", phaseIs(4, "Healthy"))
	for _, name := range []string{"api", "api-canary"} {
		dep, err := suite.client.AppsV1().Deployments(s.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := dep.Annotations["plimsoll.dev/analysis"]; ok {
			t.Errorf("%s keeps plimsoll.dev/analysis=%q that Git dropped", name, v)
		}
	}
	if raw := healthy.Annotations["plimsoll.dev/analysis-run"]; strings.Contains(raw, h4) {
		t.Errorf("revision 4 was judged (%s), though Git names no analysis", raw)
	}
}

// TestAnalysisBadInput pushes commits whose analysis or reference to one
// is wrong, each with a new image: the sync refuses each before applying
// anything, naming the file and the field, and what runs stays as it was.
func TestAnalysisBadInput(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("api v1", analysedCanary(t, "v1"))
	s.mustSync(t)
	waitForDeployment(t, s.ns, "api", "revision 1 recorded", func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/revision"] == "1"
	})
	before := getDeployment(t, s.ns, "api").Generation
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "error-rate", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the analysis: %v", err)
	}
	cases := []struct {
		name        string
		old, new    string // in analysis.yaml
		dOld, dNew  string // in deployment.yaml
		file, field string
	}{
		{name: "a condition that does not compile", old: "result < 0.01", new: "result <<< 0.01",
			file: "analysis.yaml, document 1", field: "metrics[0].successCondition"},
		{name: "a query that does not parse", old: "[5s]))\n          /", new: "[5s])\n          /",
			file: "analysis.yaml, document 1", field: "metrics[0].prometheus.query"},
		{name: "an unknown provider", old: "prometheus:", new: "graphite:",
			file: "analysis.yaml, document 1", field: "graphite"},
		{name: "a reference to an analysis that does not exist", dOld: "plimsoll.dev/analysis: error-rate", dNew: "plimsoll.dev/analysis: latency",
			file: "deployment.yaml, document 1", field: `metadata.annotations["plimsoll.dev/analysis"]`},
		{name: "an argument no analysis declares", dOld: "plimsoll.dev/analysis: error-rate", dNew: "plimsoll.dev/analysis: error-rate\n    plimsoll.dev/analysis-args: window=5m",
			file: "deployment.yaml, document 1", field: `metadata.annotations["plimsoll.dev/analysis-args"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := analysedCanary(t, "v2")
			if tc.old != "" {
				if !strings.Contains(files["analysis.yaml"], tc.old) {
					t.Fatalf("analysis.yaml lacks %q", tc.old)
				}
				files["analysis.yaml"] = strings.Replace(files["analysis.yaml"], tc.old, tc.new, 1)
			}
			if tc.dOld != "" {
				if !strings.Contains(files["deployment.yaml"], tc.dOld) {
					t.Fatalf("deployment.yaml lacks %q", tc.dOld)
				}
				files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], tc.dOld, tc.dNew, 1)
			}
			s.repo.Commit("bad: "+tc.name, files)
			out, code := s.syncOnce(t)
			if code == 0 || !strings.Contains(out, tc.file) || !strings.Contains(out, tc.field) {
				t.Fatalf("sync --once exited %d, want non-zero naming %q and %q:\n%s", code, tc.file, tc.field, out)
			}
			// The controller's spec writes bump the generation; the
			// Deployment controller's status writes do not.
			d := getDeployment(t, s.ns, "api")
			if d.Generation != before || d.Spec.Template.Spec.Containers[0].Image != "registry.example/api:v1" {
				t.Errorf("Deployment api was written (generation %d, was %d; image %s)", d.Generation, before, d.Spec.Template.Spec.Containers[0].Image)
			}
			if c, err := suite.client.AppsV1().Deployments(s.ns).Get(context.Background(), "api-canary", metav1.GetOptions{}); err == nil &&
				c.Spec.Template.Spec.Containers[0].Image != "registry.example/api:v1" {
				t.Errorf("Deployment api-canary took the refused commit's image %s", c.Spec.Template.Spec.Containers[0].Image)
			}
			now, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "error-rate", metav1.GetOptions{})
			if err != nil || now.ResourceVersion != cm.ResourceVersion {
				t.Errorf("the analysis ConfigMap was written: %v", err)
			}
		})
	}
}
