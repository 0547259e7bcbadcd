//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// analysedBlueGreen is examples/blue-green at version, with a 10s
// scale-down delay and errorRateAnalysis before and after the swap.
func analysedBlueGreen(t *testing.T, version string) map[string]string {
	t.Helper()
	files := blueGreenExample(t, version, "10s")
	files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], "plimsoll.dev/scale-down-delay: 10s",
		"plimsoll.dev/scale-down-delay: 10s\n    plimsoll.dev/analysis: error-rate", 1)
	files["analysis.yaml"] = errorRateAnalysis
	return files
}

// TestAnalysisBlueGreen judges blue-green revisions with the real
// Prometheus: one with 10% errors fails before the swap and never gets
// traffic; one that passes before the swap and turns bad after it is
// swapped back within 2s of the verdict, the active Service never below 4
// ready endpoints.
func TestAnalysisBlueGreen(t *testing.T) {
	p := startPrometheus(t)
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", analysedBlueGreen(t, "v1"))
	kit.StartDaemon(t, s, "--interval", "1s", "--prometheus-url", p.url)
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "shop")
	endpoints.waitReady(t, "4 blue endpoints", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-blue-") })

	t.Log("1. revision 2 answers 10% errors: it fails pre-promotion and is never swapped in")
	mark := endpoints.mark()
	s.repo.Commit("shop v2", analysedBlueGreen(t, "v2"))
	h2 := newHash(t, s.ns, "shop-blue", 2)
	p.exporter.set(s.ns, "shop", h2, 50, 0.10)
	failed := waitForDeployment(t, s.ns, "shop-blue", "revision 2 Degraded", phaseIs(2, "Degraded", "failed pre-promotion", "error-rate/ratio failed"))
	t.Logf("message: %s", failed.Annotations["plimsoll.dev/message"])
	if r := recordedRun(t, failed); r.Stage != "pre-promotion" || r.Verdict != "Failed" || r.Hash != h2 {
		t.Errorf("run %+v, want pre-promotion Failed for %s", r, h2)
	}
	waitForDeployment(t, s.ns, "shop-green", "scaled to 0", scaledTo(0))
	for _, line := range endpoints.history(mark) {
		if strings.Contains(line, "shop-green-") {
			t.Errorf("a green pod served during revision 2: %s", line)
		}
	}
	if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "blue" {
		t.Errorf("the active Service selects %q, want blue", got)
	}

	t.Log("2. revision 3 passes before the swap, then answers 50% errors: swapped back")
	mark = endpoints.mark()
	s.repo.Commit("shop v3", analysedBlueGreen(t, "v3"))
	h3 := newHash(t, s.ns, "shop-blue", 3)
	p.exporter.set(s.ns, "shop", h3, 50, 0.001)
	endpoints.waitReady(t, "the swap to green", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-green-") })
	onGreen := endpoints.mark()
	swapped := waitForDeployment(t, s.ns, "shop-green", "post-promotion running", func(d *appsv1.Deployment) bool {
		return strings.Contains(d.Annotations["plimsoll.dev/analysis-run"], `"stage":"post-promotion"`)
	})
	t.Logf("after the swap: %s", swapped.Annotations["plimsoll.dev/message"])
	// The same series turns bad: its 5s rate window mixes the old 0.1%
	// with the new ratio for a while. At 50% it is past the 5% failure
	// line within half a second of new samples; at 10% the first
	// measurement could read between 1% and 5% (inconclusive).
	p.exporter.set(s.ns, "shop", h3, 50, 0.5)
	back := waitForDeployment(t, s.ns, "shop-blue", "revision 3 Degraded", phaseIs(3, "Degraded", "failed post-promotion"))
	r := recordedRun(t, back)
	if r.Stage != "post-promotion" || r.Verdict != "Failed" {
		t.Fatalf("run %+v, want post-promotion Failed", r)
	}
	verdict := r.Metrics[0].At
	t.Logf("verdict at %s on %s; message: %s", verdict.Format("15:04:05.000"), r.Metrics[0].Value, back.Annotations["plimsoll.dev/message"])
	endpoints.waitReady(t, "4 blue endpoints again", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-blue-") })
	swappedBack, _ := endpoints.firstSince(onGreen, func(pods []string) bool { return len(pods) > 0 && allWithPrefix(pods, "shop-blue-") })
	if gap := swappedBack.Sub(verdict); gap > 2*time.Second || gap < 0 {
		t.Errorf("swapped back %s after the verdict, want within 2s; history:\n%s", gap.Round(time.Millisecond), strings.Join(endpoints.history(mark), "\n"))
	}
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the active Service had %d ready endpoints (%v), want never fewer than 4; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	waitForDeployment(t, s.ns, "shop-green", "scaled to 0", scaledTo(0))
	if !hasEvent(t, s.ns, back.Name, "Analysis", "post-promotion: analysis error-rate/ratio failed") &&
		!hasEvent(t, s.ns, "shop-green", "Analysis", "post-promotion: analysis error-rate/ratio failed") {
		t.Error("no Analysis Event for the post-promotion verdict")
	}
}

// analysedRolling is examples/rolling at version, verified by
// errorRateAnalysis once each revision is available.
func analysedRolling(t *testing.T, version string) map[string]string {
	t.Helper()
	files := example(t, "rolling", "registry.example/web:v1", "registry.example/web:"+version,
		"  name: web\n", "  name: web\n  annotations:\n    plimsoll.dev/analysis: error-rate\n")
	files["analysis.yaml"] = errorRateAnalysis
	return files
}

// TestAnalysisRolling verifies rolling revisions with the real
// Prometheus once they are available: one that passes becomes Healthy
// only after its verification; one with 10% errors is rolled back to the
// one before.
func TestAnalysisRolling(t *testing.T) {
	p := startPrometheus(t)
	s := newSyncTarget(t)
	s.repo.Commit("web v1", analysedRolling(t, "v1"))
	kit.StartDaemon(t, s, "--interval", "1s", "--prometheus-url", p.url)
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy (nothing to roll back to, nothing verified)", phaseIs(1, "Healthy"))

	t.Log("1. revision 2 answers 0.1% errors: verified, then Healthy")
	s.repo.Commit("web v2", analysedRolling(t, "v2"))
	h2 := newHash(t, s.ns, "web", 2)
	p.exporter.set(s.ns, "web", h2, 50, 0.001)
	waitForDeployment(t, s.ns, "web", "verifying", phaseIs(2, "Progressing", "verifying"))
	healthy := waitForDeployment(t, s.ns, "web", "revision 2 Healthy", phaseIs(2, "Healthy"))
	if r := recordedRun(t, healthy); r.Stage != "verification" || r.Verdict != "Successful" || r.Metrics[0].Successful != 3 {
		t.Errorf("run %+v, want the verification Successful after 3 measurements", r)
	}

	t.Log("2. revision 3 answers 10% errors: its verification fails and it is rolled back to revision 2")
	s.repo.Commit("web v3", analysedRolling(t, "v3"))
	h3 := newHash(t, s.ns, "web", 3)
	p.exporter.set(s.ns, "web", h3, 50, 0.10)
	failed := waitForDeployment(t, s.ns, "web", "revision 3 rolled back", phaseIs(3, "Degraded", "verification: analysis error-rate/ratio failed", "rolled back to revision 2"))
	t.Logf("message: %s", failed.Annotations["plimsoll.dev/message"])
	if failed.Annotations["plimsoll.dev/failed-hash"] != h3 {
		t.Errorf("failed-hash %q, want %q", failed.Annotations["plimsoll.dev/failed-hash"], h3)
	}
	waitForPods(t, s.ns, "web", 4, "registry.example/web:v2")
}
