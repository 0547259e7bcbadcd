//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestSyncOnceWait runs `plimsoll sync --once --wait` with no daemon: it
// sees a rolling and a canary workload through to Healthy, printing a line
// for each; it fails naming a workload that ended Degraded; it times out
// naming one that waits for a promote; and it does not take --interval,
// which means nothing to one sync.
func TestSyncOnceWait(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	quick := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause 2s, 100%"`}
	tree := func(web, api string, canarySteps ...string) map[string]string {
		return mergeFiles(inDir("web", example(t, "rolling", "registry.example/web:v1", "registry.example/web:"+web,
			"  replicas: 4\n", "  replicas: 4\n  progressDeadlineSeconds: 10\n")),
			inDir("api", canaryExample(t, api, canarySteps...)))
	}

	t.Log("1. first revisions, then v2 of both: each line printed, exit 0")
	s.repo.Commit("v1", tree("v1", "v1", quick...))
	if out, code := s.syncOnce(t, "--wait", "--timeout", "2m"); code != 0 {
		t.Fatalf("sync --once --wait exited %d:\n%s", code, out)
	}
	s.repo.Commit("v2", tree("v2", "v2", quick...))
	out, code := s.syncOnce(t, "--wait", "--timeout", "2m")
	t.Logf("output:\n%s", out)
	if code != 0 {
		t.Fatalf("sync --once --wait exited %d:\n%s", code, out)
	}
	for _, want := range []string{s.ns + "/web Healthy: ", s.ns + "/api Healthy: revision 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := images(t, s.ns, "app=api", "api-"); !onlyImage(got, 4, "registry.example/api:v2") {
		t.Errorf("canary pods run %v after the wait, want 4 on v2", got)
	}

	t.Log("2. a rolling image that never starts: it ends Degraded, the exit is non-zero and names it")
	s.repo.Commit("broken web", tree("does-not-exist", "v2", quick...))
	out, code = s.syncOnce(t, "--wait", "--timeout", "2m")
	t.Logf("output:\n%s", out)
	if code == 0 || !strings.Contains(out, "ended Degraded: "+s.ns+"/web") || !strings.Contains(out, s.ns+"/web Degraded: ") {
		t.Errorf("sync --once --wait exited %d, want non-zero naming %s/web as Degraded:\n%s", code, s.ns, out)
	}

	t.Log("3. a canary waiting for promote: the wait times out naming it")
	s.repo.Commit("api v3 held", tree("v2", "v3"))
	out, code = s.syncOnce(t, "--wait", "--timeout", "15s")
	if code == 0 || !strings.Contains(out, "timed out after 15s") || !strings.Contains(out, "still rolling: "+s.ns+"/api") {
		t.Errorf("sync --once --wait exited %d, want a timeout naming %s/api:\n%s", code, s.ns, out)
	}

	t.Log("4. flags that mean nothing to one sync are refused")
	for _, args := range [][]string{{"--interval", "1s"}, {"--timeout", "1m"}} {
		out, code := s.syncOnce(t, args...)
		if code == 0 || !strings.Contains(out, args[0]) {
			t.Errorf("sync --once %s exited %d, want an error naming the flag:\n%s", strings.Join(args, " "), code, out)
		}
	}
}
