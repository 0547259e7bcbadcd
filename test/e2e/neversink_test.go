//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestCanaryFirstRevisionFails: a canary workload whose first revision
// never becomes Ready is Degraded at its progress deadline, as a rolling or
// blue-green one is, and `plimsoll sync --once --wait` returns then,
// non-zero and naming it, long before its own timeout.
func TestCanaryFirstRevisionFails(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("api broken from the start", canaryExample(t, "does-not-exist", "progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10"))
	start := time.Now()
	out, code := s.syncOnce(t, "--wait", "--timeout", "5m")
	took := time.Since(start)
	t.Logf("sync --once --wait exited %d after %s:\n%s", code, took.Round(time.Second), out)
	if code == 0 || !strings.Contains(out, s.ns+"/api Degraded: ") || !strings.Contains(out, "failed on the stable Deployment") {
		t.Errorf("sync --once --wait exited %d, want non-zero naming %s/api Degraded, failed on the stable Deployment:\n%s", code, s.ns, out)
	}
	if strings.Contains(out, "timed out") {
		t.Errorf("sync --once --wait ran to its timeout instead of returning at the deadline:\n%s", out)
	}
	d := getDeployment(t, s.ns, "api")
	if a := d.Annotations; a["plimsoll.dev/phase"] != "Degraded" || a["plimsoll.dev/failed-hash"] == "" || a["plimsoll.dev/failed-hash"] != a["plimsoll.dev/template-hash"] {
		t.Errorf("api annotations %v, want phase Degraded with its template hash failed", a)
	}
}

// TestFixAfterHeldFailure: with auto-rollback off, a revision whose pods
// never become Ready is held Degraded, its pods kept for a look; the fix
// pushed after it goes out and becomes Healthy, on a canary and on a
// blue-green workload, judged on its own pods and not failed for the held
// revision's.
func TestFixAfterHeldFailure(t *testing.T) {
	parallel(t)
	held := []string{"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10"}
	tree := func(version string) map[string]string {
		return mergeFiles(
			inDir("api", canaryExample(t, version, append(held,
				`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, 100%"`+"\n    plimsoll.dev/auto-rollback: \"false\"")...)),
			inDir("shop", example(t, "blue-green", "registry.example/shop:v1", "registry.example/shop:"+version,
				"plimsoll.dev/scale-down-delay: 30s", "plimsoll.dev/scale-down-delay: 2s\n    plimsoll.dev/auto-rollback: \"false\"",
				"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10")))
	}
	s := newSyncTarget(t)
	s.repo.Commit("v1", tree("v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "api revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "shop revision 1 Healthy", phaseIs(1, "Healthy"))
	apiEndpoints, shopEndpoints := watchEndpoints(t, s.ns, "api"), watchEndpoints(t, s.ns, "shop")
	apiEndpoints.waitReady(t, "4 api endpoints", func(pods []string) bool { return len(pods) == 4 })
	shopEndpoints.waitReady(t, "4 shop endpoints", func(pods []string) bool { return len(pods) == 4 })
	apiMark, shopMark := apiEndpoints.mark(), shopEndpoints.mark()
	apiPhases, shopPhases := watchPhases(t, s.ns, "api"), watchPhases(t, s.ns, "shop-green")

	t.Log("1. v2 never becomes Ready: held Degraded, its pods kept")
	s.repo.Commit("v2 broken", tree("does-not-exist"))
	waitForDeployment(t, s.ns, "api", "api revision 2 held Degraded", phaseIs(2, "Degraded", "auto-rollback is off"))
	waitForDeployment(t, s.ns, "shop-blue", "shop revision 2 held Degraded", phaseIs(2, "Degraded", "auto-rollback is off"))
	if n := *getDeployment(t, s.ns, "shop-green").Spec.Replicas; n != 4 {
		t.Errorf("shop-green runs %d replicas after its held failure, want its 4 kept", n)
	}

	t.Log("2. the fix, v3: both go out and become Healthy")
	s.repo.Commit("v3 fixes it", tree("v3"))
	waitForDeployment(t, s.ns, "api", "api revision 3 Healthy", phaseIs(3, "Healthy"))
	waitForDeployment(t, s.ns, "shop-green", "shop revision 3 Healthy", phaseIs(3, "Healthy"))
	waitForPods(t, s.ns, "api", 4, "registry.example/api:v3")
	for name, phases := range map[string][]string{"api": apiPhases.seen(), "shop-green": shopPhases.seen()} {
		if slices.Contains(phases, "3:Degraded") {
			t.Errorf("%s was Degraded on revision 3, the fix; its phases: %v", name, phases)
		}
	}
	checkMinReady(t, apiEndpoints, apiMark, 4)
	checkMinReady(t, shopEndpoints, shopMark, 4)
}

// TestHandScaledWorkloads: a count set by hand with kubectl scale on a
// blue-green color or a canary's stable Deployment is drift, put back to
// Git's at once with a ScaleRestored Event and a log line, the phase
// saying so meanwhile; the next revision then comes up at that count,
// the Service never below it.
func TestHandScaledWorkloads(t *testing.T) {
	parallel(t)
	tree := func(version string) map[string]string {
		return mergeFiles(
			inDir("api", canaryExample(t, "v1", `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, 100%"`)),
			inDir("shop", example(t, "blue-green", "registry.example/shop:v1", "registry.example/shop:"+version,
				"plimsoll.dev/scale-down-delay: 30s", "plimsoll.dev/scale-down-delay: 2s", "replicas: 4", "replicas: 2")))
	}
	s := newSyncTarget(t)
	s.repo.Commit("v1", tree("v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "api revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "shop revision 1 Healthy", phaseIs(1, "Healthy"))
	shopEndpoints := watchEndpoints(t, s.ns, "shop")
	shopEndpoints.waitReady(t, "2 shop endpoints", func(pods []string) bool { return len(pods) == 2 })
	mark := shopEndpoints.mark()

	t.Log("1. the active color and the stable scaled by hand: Git's count comes back")
	kubectl(t, "-n", s.ns, "scale", "deployment/shop-blue", "--replicas=5")
	kubectl(t, "-n", s.ns, "scale", "deployment/api", "--replicas=6")
	for name, n := range map[string]int32{"shop-blue": 2, "api": 4} {
		waitForDeployment(t, s.ns, name, fmt.Sprintf("%s back at %d, Healthy", name, n), func(d *appsv1.Deployment) bool {
			return *d.Spec.Replicas == n && d.Status.Replicas == n && d.Annotations["plimsoll.dev/phase"] == "Healthy"
		})
		waitFor(t, "a ScaleRestored Event on "+name, func(context.Context) (bool, error) {
			return hasEvent(t, s.ns, name, "ScaleRestored", "outside Git"), nil
		})
	}
	if !strings.Contains(d.Log(), "restored a replica count changed outside Git") {
		t.Errorf("the daemon did not log the restored counts:\n%s", d.Log())
	}

	t.Log("2. the next revision comes up at Git's count; the Service never below it")
	s.repo.Commit("shop v2", tree("v2"))
	waitForDeployment(t, s.ns, "shop-green", "shop revision 2 Healthy", phaseIs(2, "Healthy"))
	checkMinReady(t, shopEndpoints, mark, 2)
	if got := *getDeployment(t, s.ns, "shop-green").Spec.Replicas; got != 2 {
		t.Errorf("shop-green runs %d replicas, want Git's 2", got)
	}
}

// TestCorrectiveActionsLeaveTraces: every change the controller undoes
// says so. `kubectl rollout undo` of a rolling workload and of a canary's
// stable Deployment is put back to Git's template as the same revision
// (the canary without going through its steps again), each with a
// TemplateRestored Event and a log line; a Service selector stripped of
// the strategy's key by hand is put back with a SelectorRepaired Event,
// on a canary's Service and on a blue-green active Service. An undo made
// while the daemon is down is put back by a daemon that starts with Git
// unreachable, from what the workload's ReplicaSets record.
func TestCorrectiveActionsLeaveTraces(t *testing.T) {
	parallel(t)
	tree := func(version string) map[string]string {
		return mergeFiles(
			inDir("web", example(t, "rolling", "registry.example/web:v1", "registry.example/web:"+version)),
			inDir("api", canaryExample(t, version, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, 100%"`)),
			inDir("shop", blueGreenExample(t, "v1", "2s")))
	}
	s := newSyncTarget(t)
	s.repo.Commit("v1", tree("v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "web", "web revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "api", "api revision 1 Healthy", phaseIs(1, "Healthy"))
	s.repo.Commit("v2", tree("v2"))
	waitForDeployment(t, s.ns, "web", "web revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "api", "api revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForPods(t, s.ns, "api", 4, "registry.example/api:v2")
	waitForDeployment(t, s.ns, "shop-blue", "shop revision 1 Healthy", phaseIs(1, "Healthy"))
	canaryScale := watchScale(t, s.ns, "api-canary")

	t.Log("1. kubectl rollout undo: Git's template comes back, as the same revision")
	kubectl(t, "-n", s.ns, "rollout", "undo", "deployment/web")
	kubectl(t, "-n", s.ns, "rollout", "undo", "deployment/api")
	for _, name := range []string{"web", "api"} {
		waitForPods(t, s.ns, name, 4, "registry.example/"+name+":v2")
		waitForDeployment(t, s.ns, name, name+" revision 2 Healthy", phaseIs(2, "Healthy"))
		waitFor(t, "a TemplateRestored Event on "+name, func(context.Context) (bool, error) {
			return hasEvent(t, s.ns, name, "TemplateRestored", "changed outside Git"), nil
		})
	}
	if got := canaryScale.max(); got != 0 {
		t.Errorf("api-canary went up to %d replicas: the undone stable went through the canary steps again", got)
	}
	if n := strings.Count(d.Log(), "restored the pod template changed by hand"); n < 2 {
		t.Errorf("the daemon logged %d template restores, want one for web and one for api:\n%s", n, d.Log())
	}

	t.Log("2. the strategies' keys taken out of the Services' selectors: put back")
	kubectl(t, "-n", s.ns, "patch", "service", "api", "--type", "json", "-p", `[{"op":"remove","path":"/spec/selector/plimsoll.dev~1serving"}]`)
	kubectl(t, "-n", s.ns, "patch", "service", "shop", "--type", "json", "-p", `[{"op":"remove","path":"/spec/selector/plimsoll.dev~1color"}]`)
	for svc, key := range map[string]string{"api": "plimsoll.dev/serving", "shop": "plimsoll.dev/color"} {
		waitFor(t, key+" back in the selector of "+svc, func(context.Context) (bool, error) {
			return selector(t, s.ns, svc)[key] != "", nil
		})
		waitFor(t, "a SelectorRepaired Event on Service "+svc, func(context.Context) (bool, error) {
			return hasEvent(t, s.ns, svc, "SelectorRepaired", "changed outside"), nil
		})
	}
	if n := strings.Count(d.Log(), "repaired a Service selector changed outside Git"); n < 2 {
		t.Errorf("the daemon logged %d selector repairs, want 2:\n%s", n, d.Log())
	}

	t.Log("3. kubectl rollout undo while the daemon is down, Git unreachable when it starts: the recorded revision comes back from its ReplicaSet")
	d.Stop(t)
	kubectl(t, "-n", s.ns, "rollout", "undo", "deployment/web")
	waitForPods(t, s.ns, "web", 4, "registry.example/web:v1")
	s.url = "file://" + t.TempDir() + "/gone"
	again := kit.StartDaemon(t, s, "--interval", "1s")
	waitForPods(t, s.ns, "web", 4, "registry.example/web:v2")
	waitForDeployment(t, s.ns, "web", "web revision 2 Healthy", phaseIs(2, "Healthy"))
	if !strings.Contains(again.Log(), "restored the pod template changed by hand") {
		t.Errorf("the daemon that started with Git unreachable logged no template restore:\n%s", again.Log())
	}
}

// scaleWatch records the highest spec.replicas a Deployment had.
type scaleWatch struct {
	mu   gosync.Mutex
	high int32
}

// watchScale follows Deployment name's spec.replicas from now on.
func watchScale(t *testing.T, ns, name string) *scaleWatch {
	t.Helper()
	sw := &scaleWatch{}
	followDeployment(t, ns, name, func(d *appsv1.Deployment) bool {
		if d.Spec.Replicas != nil {
			sw.mu.Lock()
			sw.high = max(sw.high, *d.Spec.Replicas)
			sw.mu.Unlock()
		}
		return false
	})
	return sw
}

// max is the highest count seen.
func (sw *scaleWatch) max() int32 {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.high
}

// TestCanaryAbortKeepsLastEndpoints: a canary workload whose first
// revision never became Ready has its second revision's canary pod as the
// Service's only ready endpoint. An abort keeps that pod serving, the
// canary at its count, rather than take the Service to 0, and says so;
// the stable goes back to 4. The next revision goes out from there, and
// the Service never has fewer than 1 ready endpoint.
func TestCanaryAbortKeepsLastEndpoints(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	tree := func(version string) map[string]string {
		return canaryExample(t, version, "progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10",
			`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause, 100%"`)
	}
	s.repo.Commit("api broken from the start", tree("does-not-exist"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Degraded", phaseIs(1, "Degraded"))
	endpoints := watchEndpoints(t, s.ns, "api")

	t.Log("1. revision 2: its canary pod is the Service's only ready endpoint")
	s.repo.Commit("api v2", tree("v2"))
	waitForDeployment(t, s.ns, "api", "revision 2 at step 2/3, waiting for promote", phaseIs(2, "Paused", "canary step 2/3"))
	endpoints.waitReady(t, "the canary's pod alone", func(pods []string) bool {
		return len(pods) == 1 && len(withPrefix(pods, "api-canary-")) == 1
	})
	mark := endpoints.mark()

	t.Log("2. abort: the canary's pod serves on, the stable goes back to 4")
	command(t, s.ns, "api", "abort")
	waitForDeployment(t, s.ns, "api", "revision 2 Degraded, the canary's pods serving", phaseIs(2, "Degraded", "aborted revision 2",
		"canary pods serve until a stable pod is ready"))
	waitForDeployment(t, s.ns, "api", "the stable asking for 4", func(d *appsv1.Deployment) bool {
		return *d.Spec.Replicas == 4 && d.Annotations["plimsoll.dev/command"] == ""
	})
	if c := getDeployment(t, s.ns, "api-canary"); c == nil || *c.Spec.Replicas != 1 {
		t.Errorf("api-canary after the abort: %v, want it kept at 1 while its pod is the only one serving", c)
	}
	endpoints.waitReady(t, "the canary's pod still serving", func(pods []string) bool {
		return len(withPrefix(pods, "api-canary-")) == 1
	})
	checkMinReady(t, endpoints, mark, 1)

	t.Log("3. revision 3 goes out from there, the Service never without a ready endpoint")
	s.repo.Commit("api v3", tree("v3"))
	waitForDeployment(t, s.ns, "api", "revision 3 at step 2/3, waiting for promote", phaseIs(3, "Paused", "canary step 2/3"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 3 Healthy", phaseIs(3, "Healthy"))
	waitForPods(t, s.ns, "api", 4, "registry.example/api:v3")
	checkMinReady(t, endpoints, mark, 1)
	t.Logf("endpoints from the abort on:\n%s", strings.Join(endpoints.history(mark), "\n"))
}
