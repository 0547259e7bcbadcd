//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// switchedExample is examples/rolling (Deployment web, Service web, 4
// replicas) with image web:<version> and the annotations given as one
// YAML block ("" for none): the strategy a commit switches to; replace
// are further old -> new pairs (see example).
func switchedExample(t *testing.T, version, annotations string, replace ...string) map[string]string {
	t.Helper()
	pairs := []string{"registry.example/web:v1", "registry.example/web:" + version}
	if annotations != "" {
		pairs = append(pairs, "    app: web\nspec:", "    app: web\n  annotations:\n"+annotations+"spec:")
	}
	return example(t, "rolling", append(pairs, replace...)...)
}

// TestStrategySwitch switches one workload from rolling to blue-green,
// back to rolling, to canary and back to rolling, each with a new image,
// while watching the Service's EndpointSlices: every switch converges, and
// the Service never has fewer ready endpoints than the strategy in force
// allows (4 while blue-green or canary steers it, 3 while a rolling update
// with maxUnavailable 25% does).
func TestStrategySwitch(t *testing.T) {
	parallel(t)
	const blueGreen = "    plimsoll.dev/strategy: blue-green\n    plimsoll.dev/active-service: web\n    plimsoll.dev/scale-down-delay: 3s\n"
	const canary = "    plimsoll.dev/strategy: canary\n    plimsoll.dev/service: web\n    plimsoll.dev/steps: \"50%, 100%\"\n"
	s := newSyncTarget(t)
	s.repo.Commit("web v1, rolling", switchedExample(t, "v1", ""))
	daemon := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "web")
	endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })

	t.Log("1. rolling to blue-green: blue takes over from web, which scales to 0")
	mark := endpoints.mark()
	v2 := s.repo.Commit("web v2, blue-green", switchedExample(t, "v2", blueGreen))
	waitForDeployment(t, s.ns, "web-blue", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "web", "scaled to 0", scaledTo(0))
	if got := selector(t, s.ns, "web")["plimsoll.dev/color"]; got != "blue" {
		t.Errorf("Service selects color %q, want blue", got)
	}
	endpoints.waitReady(t, "4 blue endpoints", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "web-blue-") })
	checkMinReady(t, endpoints, mark, 4)
	// Git's web is served by web-blue, and the old web at 0 is no drift.
	s.waitForCommit(t, v2)
	checkResyncQuiet(t, s, daemon)

	t.Log("2. back to rolling: web takes over; the colors and the color selector go")
	mark = endpoints.mark()
	s.repo.Commit("web v3, rolling", switchedExample(t, "v3", ""))
	waitForDeployment(t, s.ns, "web", "revision 3 Healthy", phaseIs(3, "Healthy"))
	waitFor(t, "the colors to be deleted", func(ctx context.Context) (bool, error) {
		return getDeployment(t, s.ns, "web-blue") == nil && getDeployment(t, s.ns, "web-green") == nil, nil
	})
	if sel := selector(t, s.ns, "web"); sel["plimsoll.dev/color"] != "" {
		t.Errorf("Service selector %v still has a color", sel)
	}
	endpoints.waitReady(t, "4 endpoints of web", func(pods []string) bool {
		return len(pods) == 4 && len(withPrefix(pods, "web-blue-")) == 0 && len(withPrefix(pods, "web-green-")) == 0
	})
	checkMinReady(t, endpoints, mark, 4)
	checkPods(t, s.ns, "app=web", 4, "registry.example/web:v3")
	d := getDeployment(t, s.ns, "web")
	if d.Annotations["plimsoll.dev/strategy"] != "" || d.Annotations["plimsoll.dev/role"] != "primary" {
		t.Errorf("web after the switch back: annotations %v, want no strategy and role primary", d.Annotations)
	}

	t.Log("3. rolling to canary: web becomes the stable Deployment; the canary goes through 50% to 100%")
	mark = endpoints.mark()
	s.repo.Commit("web v4, canary", switchedExample(t, "v4", canary))
	waitForDeployment(t, s.ns, "web", "revision 4 Healthy", phaseIs(4, "Healthy"))
	waitForDeployment(t, s.ns, "web-canary", "scaled to 0", scaledTo(0))
	if got := selector(t, s.ns, "web")["plimsoll.dev/serving"]; got != "true" {
		t.Errorf("Service selector %v, want plimsoll.dev/serving=true", selector(t, s.ns, "web"))
	}
	waitFor(t, "4 pods of web on v4", func(ctx context.Context) (bool, error) {
		ready, unready := podsByReadiness(t, s.ns, "app=web")
		return len(ready) == 4 && len(unready) == 0, nil
	})
	checkPods(t, s.ns, "app=web", 4, "registry.example/web:v4")
	// Labelling the stable pods serving is a template change; the stable
	// grows by one pod for it, so 4 stay available.
	checkMinReady(t, endpoints, mark, 4)

	t.Log("4. back to rolling: the canary and the serving selector go")
	mark = endpoints.mark()
	s.repo.Commit("web v5, rolling", switchedExample(t, "v5", ""))
	waitForDeployment(t, s.ns, "web", "revision 5 Healthy", phaseIs(5, "Healthy"))
	waitFor(t, "the canary to be deleted", func(ctx context.Context) (bool, error) {
		return getDeployment(t, s.ns, "web-canary") == nil, nil
	})
	waitFor(t, "the serving key to leave the selector", func(ctx context.Context) (bool, error) {
		_, ok := selector(t, s.ns, "web")["plimsoll.dev/serving"]
		return !ok, nil
	})
	waitFor(t, "4 pods of web on v5", func(ctx context.Context) (bool, error) {
		ready, unready := podsByReadiness(t, s.ns, "app=web")
		return len(ready) == 4 && len(unready) == 0, nil
	})
	checkPods(t, s.ns, "app=web", 4, "registry.example/web:v5")
	checkMinReady(t, endpoints, mark, 3)
	d = waitForDeployment(t, s.ns, "web", "no canary annotations", func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/strategy"] == "" && d.Annotations["plimsoll.dev/steps"] == ""
	})
	if d.Annotations["plimsoll.dev/role"] != "primary" {
		t.Errorf("web role %q, want primary", d.Annotations["plimsoll.dev/role"])
	}
}

// checkMinReady checks that the Service had at least n ready endpoints in
// every state since mark.
func checkMinReady(t *testing.T, w *endpointWatch, mark, n int) {
	t.Helper()
	if got, pods := w.minReadySince(mark); got < n {
		t.Errorf("the Service had %d ready endpoints (%v), want never fewer than %d; history:\n%s",
			got, pods, n, strings.Join(w.history(mark), "\n"))
	}
}
