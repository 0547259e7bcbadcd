package rollout

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// Matchers of request lines (see requests).
var (
	labelled   = `"plimsoll.dev/serving":"true"`
	unlabelled = `"plimsoll.dev/serving":null`
)

// find returns the index of the first request that has every part, -1
// when none has.
func find(reqs []string, parts ...string) int {
	return slices.IndexFunc(reqs, func(r string) bool {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				return false
			}
		}
		return true
	})
}

// roundOf returns the index of the first round that has a request with
// every part, -1 when none has.
func roundOf(rounds [][]string, parts ...string) int {
	return slices.IndexFunc(rounds, func(r []string) bool { return find(r, parts...) >= 0 })
}

// roundWith returns the first round that has a request with every part.
func roundWith(t *testing.T, rounds [][]string, parts ...string) []string {
	t.Helper()
	i := roundOf(rounds, parts...)
	if i < 0 {
		t.Fatalf("no round has a request with %q; rounds:\n%s", parts, show(rounds))
	}
	return rounds[i]
}

func show(rounds [][]string) string {
	var b strings.Builder
	for i, r := range rounds {
		fmt.Fprintf(&b, "round %d:\n  %s\n", i, strings.Join(r, "\n  "))
	}
	return b.String()
}

// before checks that in round r the first request with a comes before the
// first with b.
func before(t *testing.T, r []string, a, b []string) {
	t.Helper()
	i, j := find(r, a...), find(r, b...)
	if i < 0 || j < 0 || i > j {
		t.Errorf("want %q before %q in:\n  %s", a, b, strings.Join(r, "\n  "))
	}
}

// TestCanaryStepOrder rolls canary "api" (4 replicas, steps "50%, 100%")
// from v1 to v2 on the fake cluster and checks the order of each step's
// writes as the planner lists them: canary pods are labelled before the
// stable Deployment scales down for them; on promotion, stable takes the
// template before the canary's pods are unlabelled and it goes to zero,
// and those pods are unlabelled before it scales down. The promotion
// surges the whole count, and Git's strategy is back on the stable in the
// end.
func TestCanaryStepOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	rounds := k.untilQuiet()

	step := roundWith(t, rounds, "patch pods/api-canary-", labelled)
	before(t, step, []string{"patch pods/api-canary-", labelled}, []string{"update deployments/api ", "replicas=2"})
	if n := strings.Count(strings.Join(step, "\n"), labelled); n != 2 {
		t.Errorf("%d canary pods labelled at 50%% of 4, want 2:\n%s", n, strings.Join(step, "\n"))
	}
	promoted := roundWith(t, rounds, "patch pods/api-canary-", unlabelled)
	before(t, promoted, []string{"patch pods/api-canary-", unlabelled}, []string{"update deployments/api-canary", "replicas=0"})
	if i, j := roundOf(rounds, "patch pods/api-canary-", unlabelled), roundOf(rounds, "update deployments/api ", "replicas=4"); j < 0 || j >= i {
		t.Errorf("the canary pods lost their label before stable was back at 4:\n%s", show(rounds))
	}
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || *k.deployment("api-canary").Spec.Replicas != 0 {
		t.Errorf("after the rollout: api %s, api-canary at %d; want Healthy and 0", d.Annotations[contract.AnnotationPhase], *k.deployment("api-canary").Spec.Replicas)
	}
	if roundOf(rounds, "update deployments/api ", "replicas=4 maxSurge=100%") < 0 {
		t.Errorf("no promotion of api with maxSurge 100%%:\n%s", show(rounds))
	}
	if stable, canary := k.deployment("api").Spec.Strategy, k.deployment("api-canary").Spec.Strategy; !reflect.DeepEqual(stable, canary) {
		t.Errorf("api's strategy after the rollout %+v, want Git's (api-canary's) %+v", stable, canary)
	}
}

// TestCanaryAbortOrder holds canary "api" at 50% behind a pause, then
// aborts: the canary pods are unlabelled first, so they stop serving at
// once, then stable goes back to 4 and the canary to 0.
func TestCanaryAbortOrder(t *testing.T) {
	held := maps.Clone(canaryAnnotations)
	held[contract.AnnotationSteps] = "50%, pause, 100%"
	k := newCluster(t, "api")
	k.toV2(held)
	k.untilQuiet()
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhasePaused || *d.Spec.Replicas != 2 {
		t.Fatalf("api %s at %d replicas, want Paused at 2", d.Annotations[contract.AnnotationPhase], *d.Spec.Replicas)
	}
	sendCommand(t, k, "api", contract.CommandAbort)
	r := k.round()
	before(t, r, []string{"patch pods/api-canary-", unlabelled}, []string{"update deployments/api ", "replicas=4"})
	before(t, r, []string{"update deployments/api ", "replicas=4"}, []string{"update deployments/api-canary", "replicas=0"})
	if n := strings.Count(strings.Join(r, "\n"), unlabelled); n != 2 {
		t.Errorf("%d canary pods unlabelled by the abort, want 2:\n%s", n, strings.Join(r, "\n"))
	}
}

// TestBlueGreenSwapOrder rolls blue-green "api" from v1 on blue to v2 on
// green: green is written (scaled up, status) before the active Service
// selects it, and blue, which served until the swap, is scaled down only
// once the Service's endpoints have left it, never in the swap's reconcile.
func TestBlueGreenSwapOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(blueGreenAnnotations)

	var swap []string
	for range 10 {
		if swap = k.round(); find(swap, "patch services/api", `"green"`) >= 0 {
			break
		}
	}
	before(t, swap, []string{"update deployments/api-green"}, []string{"patch services/api", `"green"`})
	if i := find(swap, "update deployments/api-blue", "replicas=0"); i >= 0 {
		t.Errorf("blue scaled down in the swap's reconcile:\n  %s", strings.Join(swap, "\n  "))
	}
	// The endpoints have not followed the swap yet: blue still serves.
	if err := k.c.reconcile(k.ctx, "shop/api"); err != nil {
		t.Fatal(err)
	}
	if r := requests(k.client); find(r, "update deployments/api-blue", "replicas=0") >= 0 {
		t.Errorf("blue scaled down while the active Service still had its endpoints:\n  %s", strings.Join(r, "\n  "))
	}
	rounds := k.untilQuiet()
	roundWith(t, rounds, "update deployments/api-blue", "replicas=0")
	if got := *k.deployment("api-green").Spec.Replicas; got != 4 {
		t.Errorf("green at %d, want 4", got)
	}
}

// TestBlueGreenNoActiveColorBothCarryHash: the active Service selects no
// color and both colors carry the live template (a selector edited by
// hand, or a crash between writes). The planner's target color is blue:
// blue is written and the Service selects it, and green, which lost the
// choice, scales to zero.
func TestBlueGreenNoActiveColorBothCarryHash(t *testing.T) {
	k := newCluster(t, "api")
	k.handOver("c0ffee1", gitDeployment("v1", blueGreenAnnotations))
	k.untilQuiet()

	green := k.deployment("api-blue").DeepCopy()
	green.ObjectMeta = metav1.ObjectMeta{Name: "api-green", Namespace: "shop", Labels: green.Labels, Annotations: green.Annotations}
	green.Labels[contract.LabelColor] = contract.ColorGreen
	green.Spec.Selector.MatchLabels[contract.LabelColor] = contract.ColorGreen
	green.Spec.Template.Labels[contract.LabelColor] = contract.ColorGreen
	green.Annotations[contract.AnnotationRole] = contract.RoleIdle
	if _, err := k.client.AppsV1().Deployments("shop").Create(k.ctx, green, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := service("api") // the selector without a color
	svc.ResourceVersion = ""
	if _, err := k.client.CoreV1().Services("shop").Update(k.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	rounds := k.untilQuiet()
	swap := roundWith(t, rounds, "patch services/api")
	if i := find(swap, "patch services/api"); !strings.Contains(swap[i], `"blue"`) {
		t.Errorf("the Service selects %s, want blue", swap[i])
	}
	before(t, swap, []string{"update deployments/api-blue"}, []string{"patch services/api"})
	roundWith(t, rounds, "update deployments/api-green", "replicas=0")
	if b := k.deployment("api-blue"); *b.Spec.Replicas != 4 || b.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("blue %s at %d, want Healthy at 4", b.Annotations[contract.AnnotationPhase], *b.Spec.Replicas)
	}
}

// sendCommand sets plimsoll.dev/command on Deployment name, as the CLI
// does.
func sendCommand(t *testing.T, k *cluster, name, cmd string) {
	t.Helper()
	d := k.deployment(name)
	d.Annotations[contract.AnnotationCommand] = cmd
	if _, err := k.client.AppsV1().Deployments("shop").Update(k.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	requests(k.client)
}
