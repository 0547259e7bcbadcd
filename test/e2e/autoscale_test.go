//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestAutoscaledWorkloads rolls out each strategy with a real
// HorizontalPodAutoscaler in Git (minReplicas 2, Git's replicas 2, an
// External metric the test sets): mid-rollout the load goes from 200 to
// 600, and kube-controller-manager's HPA controller scales from 2 to 6.
// Each rollout completes at the new revision with the HPA's 6 pods, the
// Service never has fewer ready endpoints than the strategy promises (2
// before the HPA moved, then 6, or 5 within a rolling update's
// maxUnavailable), and three polls after the HPA scaled write nothing to
// the Deployments.
func TestAutoscaledWorkloads(t *testing.T) {
	parallel(t)
	adapter := startMetricsAdapter(t)
	for _, tc := range []struct {
		name, annotations string
		// template is a replacement in the Deployment that slows the
		// rollout down, so that the HPA moves in the middle of it.
		template []string
		// before and after serve revisions 1 and 2.
		before, after string
		// promise is the fewest ready endpoints the strategy keeps at 6.
		promise int
	}{
		{"rolling", "", []string{"  template:\n", "  minReadySeconds: 8\n  template:\n"}, "web", "web", 5},
		{"canary", "    plimsoll.dev/strategy: canary\n    plimsoll.dev/service: web\n    plimsoll.dev/steps: \"50%, pause 25s, 100%\"\n", nil, "web", "web", 6},
		{"blue-green", "    plimsoll.dev/strategy: blue-green\n    plimsoll.dev/active-service: web\n    plimsoll.dev/auto-promote: \"false\"\n    plimsoll.dev/scale-down-delay: 3s\n", nil, "web-blue", "web-green", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			adapter.setLoad(t, s.ns, "web", 200)
			files := func(version string) map[string]string {
				f := switchedExample(t, version, tc.annotations, append([]string{"  replicas: 4\n", "  replicas: 2\n"}, tc.template...)...)
				f["hpa.yaml"] = loadHPAManifest("web", 2, 8)
				return f
			}
			s.repo.Commit("web v1", files("v1"))
			daemon := kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tc.before, "revision 1 Healthy", phaseIs(1, "Healthy"))
			waitForScaleTarget(t, s.ns, "web", tc.before, 2)
			endpoints := watchEndpoints(t, s.ns, "web")
			endpoints.waitReady(t, "2 endpoints", func(pods []string) bool { return len(pods) == 2 })
			mark := endpoints.mark()

			t.Log("revision 2 goes out; mid-rollout the load triples and the HPA scales 2 -> 6")
			s.repo.Commit("web v2", files("v2"))
			waitForDeployment(t, s.ns, tc.before, "revision 2 under way", func(d *appsv1.Deployment) bool {
				// Blue-green may be Paused already, waiting for promote.
				return phaseIs(2, "Progressing")(d) || phaseIs(2, "Paused")(d)
			})
			adapter.setLoad(t, s.ns, "web", 600)
			waitForScaleTarget(t, s.ns, "web", tc.before, 6)
			// The promise at 6 holds from the first moment with 6 ready
			// after the HPA asked for 6: on its way through 4, a canary
			// step may show 2 canary and 4 stable pods before it takes 2
			// stable pods out of the Service, which is no promise broken.
			scaled := endpoints.mark()
			if tc.name == "blue-green" {
				waitForDeployment(t, s.ns, tc.after, "6 of revision 2 ready on green, waiting for promote", func(d *appsv1.Deployment) bool {
					return d.Status.AvailableReplicas == 6 && *d.Spec.Replicas == 6
				})
				command(t, s.ns, tc.before, "promote")
			}
			d := waitForDeployment(t, s.ns, tc.after, "revision 2 Healthy at 6", func(d *appsv1.Deployment) bool {
				return phaseIs(2, "Healthy")(d) && *d.Spec.Replicas == 6 && d.Status.AvailableReplicas == 6
			})
			checkMinReady(t, endpoints, mark, 2)
			endpoints.waitReady(t, "6 endpoints of revision 2", func(pods []string) bool { return len(pods) == 6 && len(withPrefix(pods, tc.after+"-")) == 6 })
			waitForScaleTarget(t, s.ns, "web", tc.after, 6)
			checkPods(t, s.ns, "app=web", 6, "registry.example/web:v2")
			checkMinReady(t, endpoints, sixAt(endpoints, scaled), tc.promise)

			t.Log("three polls after the HPA scaled write nothing")
			generations := deploymentGenerations(t, s.ns)
			checkResyncQuiet(t, s, daemon)
			if after := deploymentGenerations(t, s.ns); !maps.Equal(after, generations) {
				t.Errorf("Deployment generations moved during three quiet polls: %v, then %v", generations, after)
			}
			if *d.Spec.Replicas != 6 {
				t.Errorf("%s asks for %d replicas, want the HPA's 6", tc.after, *d.Spec.Replicas)
			}
			// Git's 2 against the HPA's 6 is no drift, nor is the HPA's
			// target on a color.
			if out, code := runPlimsoll(t, append([]string{"diff"}, s.flags()...)...); code != 0 {
				t.Errorf("plimsoll diff exited %d, want 0 (no difference):\n%s", code, out)
			}
			if tc.name == "blue-green" {
				checkTargetTurnedAway(t, s, daemon, endpoints)
			}
		})
	}
}

// checkTargetTurnedAway turns the HPA of blue-green workload web, at 6 on
// web-green, to Deployment web, which runs nothing, as a sync landing in
// the middle of a swap could: the HPA goes back to web-green, and web-green
// keeps the HPA's 6 (its generation does not move) and its 6 endpoints.
func checkTargetTurnedAway(t *testing.T, s *syncTarget, daemon *kit.Daemon, endpoints *endpointWatch) {
	t.Helper()
	t.Log("the HPA is turned to web, which runs nothing: web-green keeps its 6")
	mark := endpoints.mark()
	before := getDeployment(t, s.ns, "web-green").Generation
	_, err := suite.client.AutoscalingV2().HorizontalPodAutoscalers(s.ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"scaleTargetRef":{"name":"web"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForScaleTarget(t, s.ns, "web", "web-green", 6)
	checkResyncQuiet(t, s, daemon)
	if after := getDeployment(t, s.ns, "web-green").Generation; after != before {
		t.Errorf("web-green's generation moved from %d to %d while the HPA named web", before, after)
	}
	checkMinReady(t, endpoints, mark, 6)
}

// waitForScaleTarget waits until HPA ns/name targets Deployment target and
// both agree on replicas.
func waitForScaleTarget(t *testing.T, ns, name, target string, replicas int32) {
	t.Helper()
	var last string
	waitFor(t, fmt.Sprintf("HPA %s to scale %s to %d", name, target, replicas), func(ctx context.Context) (bool, error) {
		hpa, err := suite.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		d := getDeployment(t, ns, target)
		active := hpaCondition(hpa, autoscalingv2.ScalingActive)
		now := fmt.Sprintf("target %s, desiredReplicas %d, ScalingActive %s", hpa.Spec.ScaleTargetRef.Name, hpa.Status.DesiredReplicas, active.Status)
		if d != nil {
			now += fmt.Sprintf(", %s spec.replicas %d", target, *d.Spec.Replicas)
		}
		if now != last {
			t.Logf("HPA %s: %s", name, now)
			last = now
		}
		return hpa.Spec.ScaleTargetRef.Name == target && active.Status == corev1.ConditionTrue &&
			hpa.Status.DesiredReplicas == replicas && d != nil && *d.Spec.Replicas == replicas, nil
	})
}

// deploymentGenerations returns the generation of every Deployment of ns: a
// write of its spec or annotations moves it.
func deploymentGenerations(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	list, err := suite.client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out
}

// sixAt returns the mark just after the first state since mark with 6
// ready endpoints.
func sixAt(w *endpointWatch, mark int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := mark; i < len(w.states); i++ {
		if len(w.states[i].pods) >= 6 {
			return i + 1
		}
	}
	return len(w.states)
}

// TestAutoscaledCanaryWithoutReplicas is a canary workload with no
// replicas in Git and an HPA with minReplicas 5: the HPA scales the stable
// from the default 1 to 5, and it stays at 5, Healthy, with no write to
// its Deployments for three polls (it used to be scaled back to 1 at every
// reconcile, and up again by the HPA).
func TestAutoscaledCanaryWithoutReplicas(t *testing.T) {
	parallel(t)
	adapter := startMetricsAdapter(t)
	s := newSyncTarget(t)
	adapter.setLoad(t, s.ns, "web", 200)
	files := switchedExample(t, "v1", adoptCanary, "  replicas: 4\n", "")
	files["hpa.yaml"] = loadHPAManifest("web", 5, 8)
	s.repo.Commit("web v1 with an HPA and no replicas", files)
	daemon := kit.StartDaemon(t, s, "--interval", "1s")
	waitForScaleTarget(t, s.ns, "web", "web", 5)
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy at 5", func(d *appsv1.Deployment) bool {
		return phaseIs(1, "Healthy")(d) && *d.Spec.Replicas == 5 && d.Status.AvailableReplicas == 5
	})
	generations := deploymentGenerations(t, s.ns)
	checkResyncQuiet(t, s, daemon)
	if after := deploymentGenerations(t, s.ns); !maps.Equal(after, generations) {
		t.Errorf("Deployment generations moved during three quiet polls: %v, then %v", generations, after)
	}
	if d := getDeployment(t, s.ns, "web"); *d.Spec.Replicas != 5 {
		t.Errorf("the stable asks for %d replicas, want the HPA's 5", *d.Spec.Replicas)
	}
}

// TestOneShotSyncPointsNewHPAAtActiveColor adds an HPA, naming the
// workload as Git writes it, to a blue-green workload that serves from
// blue, and runs `plimsoll sync --once`: when the one-shot sync exits, the
// HPA scales web-blue, the Deployment that serves, not web, which does
// not exist. Nothing follows a one-shot sync to point it there later.
func TestOneShotSyncPointsNewHPAAtActiveColor(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	blueGreen := "    plimsoll.dev/strategy: blue-green\n    plimsoll.dev/active-service: web\n"
	files := switchedExample(t, "v1", blueGreen, "  replicas: 4\n", "  replicas: 2\n")
	s.repo.Commit("web v1", files)
	s.mustSync(t, "--wait")
	waitForDeployment(t, s.ns, "web-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))

	files["hpa.yaml"] = loadHPAManifest("web", 2, 8)
	s.repo.Commit("an HPA for web", files)
	s.mustSync(t)
	hpa, err := suite.client.AutoscalingV2().HorizontalPodAutoscalers(s.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HPA web: %v", err)
	}
	if got := hpa.Spec.ScaleTargetRef.Name; got != "web-blue" {
		t.Errorf("after the one-shot sync the HPA scales Deployment %q, want the active color web-blue", got)
	}

	// The step a one-shot sync now plans for an autoscaled workload
	// writes nothing once the HPA is where it belongs.
	generations := deploymentGenerations(t, s.ns)
	s.mustSync(t)
	if after := deploymentGenerations(t, s.ns); !maps.Equal(after, generations) {
		t.Errorf("a one-shot sync with nothing to do moved Deployment generations: %v, then %v", generations, after)
	}
	again, err := suite.client.AutoscalingV2().HorizontalPodAutoscalers(s.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HPA web: %v", err)
	}
	if again.Generation != hpa.Generation || again.Spec.ScaleTargetRef.Name != "web-blue" {
		t.Errorf("a one-shot sync with nothing to do rewrote the HPA: generation %d to %d, target %s",
			hpa.Generation, again.Generation, again.Spec.ScaleTargetRef.Name)
	}
}
