//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// canaryExample is examples/canary with image api:<version>, plus the
// extra old -> new replacements.
func canaryExample(t *testing.T, version string, replace ...string) map[string]string {
	t.Helper()
	return example(t, "canary", append([]string{"registry.example/api:v1", "registry.example/api:" + version}, replace...)...)
}

// healthyCanary commits revision 1 of examples/canary with the extra
// replacements, starts the daemon, and waits for the workload Healthy. It
// returns the sync target.
func healthyCanary(t *testing.T, replace ...string) *syncTarget {
	t.Helper()
	s := newSyncTarget(t)
	s.repo.Commit("api v1", canaryExample(t, "v1", replace...))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	return s
}

// servingCanary is healthyCanary, then waits for the Service at n ready
// endpoints (Healthy counts available pods; the EndpointSlice controller
// may list the last of them a moment later). It returns the sync target
// and the Service's endpoints, marked there.
func servingCanary(t *testing.T, n int, replace ...string) (*syncTarget, *endpointWatch, int) {
	t.Helper()
	s := healthyCanary(t, replace...)
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, fmt.Sprintf("%d endpoints", n), func(pods []string) bool { return len(pods) == n })
	return s, endpoints, endpoints.mark()
}

// TestCanaryRollout follows examples/canary (4 replicas, steps "25%,
// pause, 50%, pause, 100%") while watching the Service's EndpointSlices:
// 1 canary pod serving after step 1, 2 after a promote, then every pod on
// the new template and the canary at zero after another; then an abort at
// step 1 takes the canary out of the Service.
func TestCanaryRollout(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("api v1", canaryExample(t, "v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. first revision: the stable Deployment at 4, the Service selects serving pods")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	if got := selector(t, s.ns, "api")["plimsoll.dev/serving"]; got != "true" {
		t.Fatalf("Service selector %v, want plimsoll.dev/serving=true in it", selector(t, s.ns, "api"))
	}
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()

	t.Log("2. revision 2, step 1 (25%): exactly 1 canary pod serving, 4 serving in all")
	v2 := s.repo.Commit("api v2", canaryExample(t, "v2"))
	stable := waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote",
		phaseIs(2, "Paused", "canary step 2/5", "waiting for promote"))
	t.Logf("message: %s", stable.Annotations["plimsoll.dev/message"])
	checkServing(t, endpoints, 1, 4)
	checkQuiet(t, s.ns, "api", "api-canary")

	t.Log("3. promote: step 3 (50%), 2 canary pods serving")
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5"))
	checkServing(t, endpoints, 2, 4)

	t.Log("4. promote: 100%, the stable Deployment takes the new template; the canary scales to zero")
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	if got := images(t, s.ns, "app=api", "api-"); !onlyImage(got, 4, "registry.example/api:v2") {
		t.Errorf("pods run %v, want 4 on v2", got)
	}
	endpoints.waitReady(t, "4 stable endpoints, none of the canary", func(pods []string) bool {
		return len(pods) == 4 && len(withPrefix(pods, "api-canary-")) == 0
	})
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the Service had %d ready endpoints during the rollout (%v), want never fewer than 4; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	t.Logf("endpoints during revision 2:\n%s", strings.Join(endpoints.history(mark), "\n"))
	if history := kubectl(t, "rollout", "history", "deployment/api", "-n", s.ns); !strings.Contains(history, v2[:7]+" api v2") {
		t.Errorf("kubectl rollout history of api does not list %q:\n%s", v2[:7]+" api v2", history)
	}
	checkMetrics(t, d,
		`plimsoll_rollout_commands_total{command="promote"} 2`,
		fmt.Sprintf(`plimsoll_rollout_phase{namespace=%q,phase="Healthy",strategy="canary",workload="api"} 1`, s.ns),
		`plimsoll_rollout_duration_seconds_count{outcome="Healthy",strategy="canary"} 2`)
	if !hasEvent(t, s.ns, "api", "PhaseChanged", "Paused: canary step 2/5") {
		t.Error("no PhaseChanged Event for the pause at step 2")
	}

	t.Log("5. revision 3, abort at step 1: no canary address left in the Service")
	s.repo.Commit("api v3", canaryExample(t, "v3"))
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(3, "Paused", "canary step 2/5"))
	checkServing(t, endpoints, 1, 4)
	mark = endpoints.mark()
	aborted := time.Now()
	command(t, s.ns, "api", "abort")
	endpoints.waitReady(t, "no canary endpoint", func(pods []string) bool { return len(withPrefix(pods, "api-canary-")) == 0 })
	t.Logf("abort to no canary address in the EndpointSlices: %s", time.Since(aborted).Round(time.Millisecond))
	stable = waitForDeployment(t, s.ns, "api", "revision 3 Degraded", phaseIs(3, "Degraded"))
	if stable.Annotations["plimsoll.dev/failed-hash"] == "" || stable.Annotations["plimsoll.dev/command"] != "" {
		t.Errorf("after the abort: annotations %v, want failed-hash set and the command cleared", stable.Annotations)
	}
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	waitForDeployment(t, s.ns, "api", "back at 4", scaledTo(4))
	if got := images(t, s.ns, "app=api", "api-"); !onlyImage(got, 4, "registry.example/api:v2") {
		t.Errorf("pods after the abort run %v, want 4 on v2", got)
	}
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	t.Logf("endpoints around the abort:\n%s", strings.Join(endpoints.history(mark), "\n"))
}

// TestCanaryNewCommitMidway pushes revision 3 while revision 2's canary
// pod serves at 25% (step 2/5, waiting for promote): the canary
// Deployment takes revision 3's template at its count, revision 3's pod
// takes the place of revision 2's in the Service (which keeps 4 ready
// endpoints all along, 1 of them the canary's), and revision 3 goes all
// the way to 4 pods on v3.
func TestCanaryNewCommitMidway(t *testing.T) {
	parallel(t)
	s := healthyCanary(t)
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	s.repo.Commit("api v2", canaryExample(t, "v2"))
	waitForDeployment(t, s.ns, "api", "revision 2 at step 2/5", phaseIs(2, "Paused", "canary step 2/5", "waiting for promote"))
	checkServing(t, endpoints, 1, 4)
	mark := endpoints.mark()

	t.Log("revision 3 while revision 2's canary pod serves")
	s.repo.Commit("api v3", canaryExample(t, "v3"))
	waitForDeployment(t, s.ns, "api", "revision 3 at step 2/5", phaseIs(3, "Paused", "canary step 2/5", "waiting for promote"))
	waitFor(t, "the one canary pod on v3, serving", func(context.Context) (bool, error) {
		return onlyImage(images(t, s.ns, "app=api,plimsoll.dev/serving=true", "api-canary-"), 1, "registry.example/api:v3"), nil
	})
	checkServing(t, endpoints, 1, 4)

	t.Log("promoted twice: revision 3 on every pod")
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 3 at step 4/5", phaseIs(3, "Paused", "canary step 4/5"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 3 Healthy", phaseIs(3, "Healthy"))
	waitForPods(t, s.ns, "api", 4, "registry.example/api:v3")
	checkMinReady(t, endpoints, mark, 4)
}

// hasEvent reports whether Deployment name has an Event with reason whose
// message contains text.
func hasEvent(t *testing.T, ns, name, reason, text string) bool {
	t.Helper()
	list, err := suite.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// checkServing waits until the Service has exactly canary ready canary
// endpoints and total ready endpoints in all, and checks that it stays so.
func checkServing(t *testing.T, endpoints *endpointWatch, canary, total int) {
	t.Helper()
	endpoints.waitReady(t, fmt.Sprintf("%d canary of %d endpoints", canary, total), func(pods []string) bool {
		return len(withPrefix(pods, "api-canary-")) == canary && len(pods) == total
	})
	holdsFor(t, "the step's endpoints", 2*time.Second, func(context.Context) error {
		if pods := endpoints.ready(); len(withPrefix(pods, "api-canary-")) != canary || len(pods) != total {
			return fmt.Errorf("ready endpoints %v", pods)
		}
		return nil
	})
}

// TestCanaryFailure rolls out an image that never becomes Ready with a
// short progress deadline: no canary pod ever serves, the workload ends
// Degraded with the failed hash, and the stable pods keep serving.
func TestCanaryFailure(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	short := []string{"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10"}
	s.repo.Commit("api v1", canaryExample(t, "v1", short...))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()

	broken := s.repo.Commit("api broken", canaryExample(t, "does-not-exist", short...))
	stable := waitForDeployment(t, s.ns, "api", "revision 2 Degraded", phaseIs(2, "Degraded"))
	t.Logf("message: %s", stable.Annotations["plimsoll.dev/message"])
	if stable.Annotations["plimsoll.dev/failed-hash"] == "" || !strings.Contains(stable.Annotations["plimsoll.dev/message"], "progress deadline") {
		t.Errorf("annotations %v, want failed-hash set and the deadline in the message", stable.Annotations)
	}
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	checkNeverServed(t, endpoints, mark, "api-canary-", 4)
	checkMetrics(t, d,
		`plimsoll_rollout_auto_rollbacks_total{strategy="canary"} 1`,
		fmt.Sprintf(`plimsoll_rollout_phase{namespace=%q,phase="Degraded",strategy="canary",workload="api"} 1`, s.ns),
		`plimsoll_rollout_duration_seconds_count{outcome="Degraded",strategy="canary"} 1`)
	if !hasEvent(t, s.ns, "api", "RolledBack", "progress deadline exceeded") {
		t.Error("no RolledBack Event on Deployment api")
	}
	holdsFor(t, "the failed revision staying out", 3*time.Second, func(ctx context.Context) error {
		if got := images(t, s.ns, "app=api", "api-canary-"); len(got) != 0 {
			return fmt.Errorf("canary pods came back: %v", got)
		}
		return nil
	})
	// The refused template in Git is not drift: resyncs write nothing.
	s.waitForCommit(t, broken)
	checkResyncQuiet(t, s, d)
}

// TestCanaryReplacesPods holds a canary at step 2 (1 canary pod serving)
// and takes its serving pod away twice: deleted, its replacement is
// labelled once Ready; unlabelled by hand, it stays out of the Service and
// another canary pod is labelled in its place.
func TestCanaryReplacesPods(t *testing.T) {
	s := healthyCanary(t)
	endpoints := watchEndpoints(t, s.ns, "api")
	s.repo.Commit("api v2", canaryExample(t, "v2"))
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5"))
	checkServing(t, endpoints, 1, 4)

	t.Log("1. the serving canary pod is deleted: its replacement serves once Ready")
	first := withPrefix(endpoints.ready(), "api-canary-")[0]
	if err := suite.client.CoreV1().Pods(s.ns).Delete(context.Background(), first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoints.waitReady(t, "another canary pod serving", func(pods []string) bool {
		canary := withPrefix(pods, "api-canary-")
		return len(canary) == 1 && canary[0] != first
	})
	waitForDeployment(t, s.ns, "api", "stable back at 3", scaledTo(3))
	checkServing(t, endpoints, 1, 4)

	t.Log("2. the serving canary pod is unlabelled by hand: it stays out, another one serves")
	second := withPrefix(endpoints.ready(), "api-canary-")[0]
	kubectl(t, "-n", s.ns, "label", "pod", second, "plimsoll.dev/serving-")
	endpoints.waitReady(t, "a third canary pod serving", func(pods []string) bool {
		canary := withPrefix(pods, "api-canary-")
		return len(canary) == 1 && canary[0] != second && canary[0] != first
	})
	waitForDeployment(t, s.ns, "api", "stable back at 3", scaledTo(3))
	checkServing(t, endpoints, 1, 4)
	holdsFor(t, "the unlabelled pod staying out", 3*time.Second, func(ctx context.Context) error {
		pod, err := suite.client.CoreV1().Pods(s.ns).Get(ctx, second, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v, ok := pod.Labels["plimsoll.dev/serving"]; ok {
			return fmt.Errorf("pod %s labelled serving=%s again", second, v)
		}
		return nil
	})
	if c := getDeployment(t, s.ns, "api-canary"); *c.Spec.Replicas != 2 {
		t.Errorf("api-canary asks for %d pods, want 2: 1 serving and the one taken out", *c.Spec.Replicas)
	}

	t.Log("3. a stable pod is taken out by hand too, then promoted to the end: the pods out by hand hold nothing back")
	stablePods := slices.DeleteFunc(withPrefix(endpoints.ready(), "api-"), func(p string) bool { return strings.HasPrefix(p, "api-canary-") })
	if len(stablePods) == 0 {
		t.Fatalf("no stable pod among the ready endpoints %v", endpoints.ready())
	}
	kubectl(t, "-n", s.ns, "label", "pod", stablePods[0], "plimsoll.dev/serving-")
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	endpoints.waitReady(t, "no canary pod serving", func(pods []string) bool { return len(withPrefix(pods, "api-canary-")) == 0 })
}

// TestCanaryRetry retries a failed canary: the failed template goes out
// again (its canary pod comes back), fails again on its deadline, and the
// workload ends Degraded with the same failed hash; no canary pod serves.
func TestCanaryRetry(t *testing.T) {
	parallel(t)
	short := []string{"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10"}
	s, endpoints, mark := servingCanary(t, 4, short...)
	s.repo.Commit("api broken", canaryExample(t, "does-not-exist", short...))
	failed := waitForDeployment(t, s.ns, "api", "revision 2 Degraded", phaseIs(2, "Degraded")).Annotations["plimsoll.dev/failed-hash"]
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))

	command(t, s.ns, "api", "retry")
	waitFor(t, "the failed template to be tried again", func(ctx context.Context) (bool, error) {
		return len(images(t, s.ns, "app=api", "api-canary-")) > 0, nil
	})
	d := waitForDeployment(t, s.ns, "api", "failed again", func(d *appsv1.Deployment) bool {
		_, pending := d.Annotations["plimsoll.dev/command"]
		return !pending && d.Annotations["plimsoll.dev/phase"] == "Degraded" && d.Annotations["plimsoll.dev/failed-hash"] == failed &&
			*getDeployment(t, s.ns, "api-canary").Spec.Replicas == 0
	})
	t.Logf("after the retry: %s", d.Annotations["plimsoll.dev/message"])
	checkNeverServed(t, endpoints, mark, "api-canary-", 4)
}

// TestCanaryPauseResume pauses a canary in its timed pause: it stays at
// 25% past the pause's end until resume, then finishes.
func TestCanaryPauseResume(t *testing.T) {
	steps := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause 4s, 100%"`}
	s := healthyCanary(t, steps...)
	s.repo.Commit("api v2", canaryExample(t, "v2", steps...))
	waitForDeployment(t, s.ns, "api", "in the timed pause", phaseIs(2, "Progressing", "canary step 2/3", "paused until"))
	command(t, s.ns, "api", "pause")
	waitForDeployment(t, s.ns, "api", "Paused", phaseIs(2, "Paused", "paused"))
	holdsFor(t, "the canary staying at step 2 past the pause's end", 6*time.Second, func(ctx context.Context) error {
		d := getDeployment(t, s.ns, "api")
		if got := d.Spec.Template.Spec.Containers[0].Image; got != "registry.example/api:v1" || d.Annotations["plimsoll.dev/phase"] != "Paused" {
			return fmt.Errorf("stable runs %s, phase %s", got, d.Annotations["plimsoll.dev/phase"])
		}
		return nil
	})
	command(t, s.ns, "api", "resume")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	checkPods(t, s.ns, "app=api", 4, "registry.example/api:v2")
}

// TestCanaryPromoteOnTheCanary pauses a canary waiting for promote, then
// sets promote by hand on api-canary, the Deployment running the new
// revision, rather than on api: the promote is the workload's all the
// same, lifts the pause and moves on, its Event says so, and it leaves
// neither Deployment.
func TestCanaryPromoteOnTheCanary(t *testing.T) {
	steps := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, pause, 100%"`}
	s := healthyCanary(t, steps...)
	s.repo.Commit("api v2", canaryExample(t, "v2", steps...))
	waitForDeployment(t, s.ns, "api", "waiting for promote", phaseIs(2, "Paused", "canary step 2/3", "waiting for promote"))
	command(t, s.ns, "api", "pause")
	waitForDeployment(t, s.ns, "api", "paused", phaseIs(2, "Paused", "canary step 2/3", "; paused"))
	command(t, s.ns, "api-canary", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	checkPods(t, s.ns, "app=api", 4, "registry.example/api:v2")
	if !hasEvent(t, s.ns, "api", "Command", "lifted the pause; moved on from step 2/3") {
		t.Error("no Command Event on api saying the promote lifted the pause and moved on")
	}
	for _, name := range []string{"api", "api-canary"} {
		if cmd, ok := getDeployment(t, s.ns, name).Annotations["plimsoll.dev/command"]; ok {
			t.Errorf("%s still carries command %q", name, cmd)
		}
	}
}

// TestCanaryOneReplica rolls a canary of one replica with steps "25%,
// pause, 100%": at 25% the canary's one pod serves beside the stable's
// (the stable's share, ceil(0.75) = 1, rounds up as the canary's does),
// never in its place, and the promotion leaves one pod of the new
// template. The Service never has fewer than one ready endpoint.
func TestCanaryOneReplica(t *testing.T) {
	parallel(t)
	one := []string{"replicas: 4", "replicas: 1", `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause, 100%"`}
	s, endpoints, mark := servingCanary(t, 1, one...)

	s.repo.Commit("api v2", canaryExample(t, "v2", one...))
	waitForDeployment(t, s.ns, "api", "step 2/3 waiting for promote",
		phaseIs(2, "Paused", "canary step 2/3: 25% (1/1 pods serving); waiting for promote"))
	checkServing(t, endpoints, 1, 2)
	if d := getDeployment(t, s.ns, "api"); *d.Spec.Replicas != 1 {
		t.Errorf("the stable asks for %d pods at 25%%, want its share, 1", *d.Spec.Replicas)
	}

	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "api-canary", "scaled to 0", scaledTo(0))
	checkPods(t, s.ns, "app=api", 1, "registry.example/api:v2")
	if n, pods := endpoints.minReadySince(mark); n < 1 {
		t.Errorf("the Service had %d ready endpoints during the rollout (%v), want never none; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
}

// TestCanaryLowersWeight rolls a canary whose steps lower the weight,
// "50%, pause, 25%, pause, 100%": from 2 canary pods of 4 to 1, the
// stable goes back to 3 before a canary pod leaves the Service, and the
// pod that leaves is the one the canary's ReplicaSet deletes, so the
// Service never has fewer than 4 ready endpoints.
func TestCanaryLowersWeight(t *testing.T) {
	parallel(t)
	steps := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, pause, 25%, pause, 100%"`}
	s, endpoints, mark := servingCanary(t, 4, steps...)

	s.repo.Commit("api v2", canaryExample(t, "v2", steps...))
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5: 50% (2/4 pods serving)"))
	checkServing(t, endpoints, 2, 4)
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5: 25% (1/4 pods serving)"))
	checkServing(t, endpoints, 1, 4)
	waitForDeployment(t, s.ns, "api-canary", "at 1", scaledTo(1))
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the Service had %d ready endpoints while the weight went down (%v), want never fewer than 4; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
}
