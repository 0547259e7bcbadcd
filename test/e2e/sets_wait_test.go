//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// rollingWeb is Deployment web of 2, rolling.
const rollingWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:v1}]
`

// threeKinds is a tree of Deployment web, StatefulSet db and DaemonSet
// agent, the last at image tag agent.
func threeKinds(agent string) map[string]string {
	return map[string]string{"web.yaml": rollingWeb, "db.yaml": rollingStatefulSet("registry.example/db:v1"),
		"agent.yaml": agentDaemonSet("registry.example/agent:" + agent)}
}

// TestWaitSets runs `plimsoll wait --all` against a daemon on commits
// with a Deployment, a StatefulSet and a DaemonSet: it exits 0 once all
// three are Healthy, naming each; on a commit whose DaemonSet image never
// pulls, it exits non-zero at the DaemonSet's Degraded, naming it.
func TestWaitSets(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("v1", threeKinds("v1"))
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. every workload of the sync Healthy: exit 0")
	out, code := startWait(t, s, "--all", "--sync-name", s.ns, "--timeout", "2m").end(t)
	t.Logf("output:\n%s", out)
	for _, w := range []string{s.ns + "/web Healthy", "StatefulSet/" + s.ns + "/db Healthy", "DaemonSet/" + s.ns + "/agent Healthy"} {
		if !strings.Contains(out, w) {
			t.Errorf("wait --all does not say %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Fatalf("wait --all exited %d", code)
	}

	t.Log("2. a DaemonSet image that never pulls: non-zero at its Degraded")
	broken := s.repo.Commit("agent broken", threeKinds("does-not-exist"))
	out, code = startWait(t, s, "--all", "--sync-name", s.ns, "--commit", broken, "--timeout", "2m").end(t)
	t.Logf("output:\n%s", out)
	if code == 0 || !strings.Contains(out, "DaemonSet/"+s.ns+"/agent Degraded") || !strings.Contains(out, "1 workloads failed: DaemonSet/"+s.ns+"/agent") {
		t.Errorf("wait on the broken DaemonSet: exit %d, want non-zero naming DaemonSet %s/agent:\n%s", code, s.ns, out)
	}
}

// TestSyncOnceWaitSets runs `plimsoll sync --once --wait` on the same
// commits: exit 0 once the Deployment, the StatefulSet and the DaemonSet
// are Healthy; non-zero, naming the DaemonSet, when its image never
// pulls.
func TestSyncOnceWaitSets(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("v1", threeKinds("v1"))
	out, code := s.syncOnce(t, "--wait", "--timeout", "2m")
	for _, w := range []string{s.ns + "/web Healthy", "StatefulSet/" + s.ns + "/db Healthy", "DaemonSet/" + s.ns + "/agent Healthy"} {
		if !strings.Contains(out, w) {
			t.Errorf("sync --once --wait does not say %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Fatalf("sync --once --wait exited %d:\n%s", code, out)
	}

	s.repo.Commit("agent broken", threeKinds("does-not-exist"))
	out, code = s.syncOnce(t, "--wait", "--timeout", "2m")
	if code == 0 || !strings.Contains(out, "DaemonSet/"+s.ns+"/agent Degraded") || !strings.Contains(out, "1 of 3 workloads ended Degraded: DaemonSet/"+s.ns+"/agent") {
		t.Errorf("sync --once --wait on the broken DaemonSet: exit %d, want non-zero naming DaemonSet %s/agent:\n%s", code, s.ns, out)
	}
}
