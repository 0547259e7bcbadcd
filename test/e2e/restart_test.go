//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// killAndRestart kills d with SIGKILL, logs where the workload stood
// (primary's phase and message), and starts a new daemon for s.
func killAndRestart(t *testing.T, s *syncTarget, d *kit.Daemon, primary string) *kit.Daemon {
	t.Helper()
	d.Kill(t)
	if p := getDeployment(t, s.ns, primary); p != nil {
		t.Logf("killed the daemon at %s: %s", p.Annotations["plimsoll.dev/phase"], p.Annotations["plimsoll.dev/message"])
	}
	return kit.StartDaemon(t, s, "--interval", "1s")
}

// checkPods checks that exactly n live pods match selector, all running
// image.
func checkPods(t *testing.T, ns, selector string, n int, image string) {
	t.Helper()
	ready, unready := podsByReadiness(t, ns, selector)
	pods := append(ready, unready...)
	if len(pods) != n || len(unready) != 0 {
		t.Errorf("%d pods (%d not ready) match %s, want %d ready", len(pods), len(unready), selector, n)
	}
	for _, p := range pods {
		if got := p.Spec.Containers[0].Image; got != image {
			t.Errorf("pod %s runs %s, want %s", p.Name, got, image)
		}
	}
}

// TestBlueGreenSurvivesSIGKILL kills the daemon at each phase boundary of
// a blue-green rollout (the new color scaling up, right after the swap)
// and starts it again: the rollout finishes, the active Service never has
// fewer than 4 ready endpoints, and no pod is left over.
func TestBlueGreenSurvivesSIGKILL(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", blueGreenExample(t, "v1", "5s"))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "shop")
	endpoints.waitReady(t, "4 blue endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()

	s.repo.Commit("shop v2", blueGreenExample(t, "v2", "5s"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 2 started", func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/revision"] == "2"
	})
	d = killAndRestart(t, s, d, "shop-blue")
	endpoints.waitReady(t, "the swap to green", func(pods []string) bool { return allWithPrefix(pods, "shop-green-") })
	killAndRestart(t, s, d, "shop-green")
	waitForDeployment(t, s.ns, "shop-green", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "scaled to 0", scaledTo(0))
	checkPods(t, s.ns, "app=shop", 4, "registry.example/shop:v2")
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the active Service had %d ready endpoints (%v); history:\n%s", n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
}

// TestCanarySurvivesSIGKILL kills the daemon at each phase boundary of a
// canary rollout (step 1 bringing the canary up, the pause, the promotion
// of the stable Deployment) and starts it again: the rollout finishes
// with 4 pods on the new template, the canary at zero, and the Service
// never below 4 ready endpoints.
func TestCanarySurvivesSIGKILL(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("api v1", canaryExample(t, "v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()

	s.repo.Commit("api v2", canaryExample(t, "v2"))
	waitForDeployment(t, s.ns, "api", "revision 2 started", func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/revision"] == "2"
	})
	d = killAndRestart(t, s, d, "api")
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5"))
	d = killAndRestart(t, s, d, "api")
	checkServing(t, endpoints, 1, 4)
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "promoting the stable Deployment", phaseIs(2, "Progressing", "promot"))
	killAndRestart(t, s, d, "api")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	// Pods that are still terminating are not counted.
	waitFor(t, "4 pods in all", func(ctx context.Context) (bool, error) {
		ready, unready := podsByReadiness(t, s.ns, "app=api")
		return len(ready)+len(unready) == 4, nil
	})
	checkPods(t, s.ns, "app=api", 4, "registry.example/api:v2")
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the Service had %d ready endpoints (%v); history:\n%s", n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
}
