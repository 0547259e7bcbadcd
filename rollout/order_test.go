package rollout

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// unlabelled matches a request line that takes a pod's serving label
// away (see requests).
const unlabelled = `"plimsoll.dev/serving":null`

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
// writes as the planner lists them: the canary grows before the stable
// Deployment scales down for its pods, which serve from their template;
// on promotion the canary's ReplicaSet is handed over to the stable (see
// strategies.planHandOver): the canary grows to 4 and is paused, then the
// stable is paused at 0, its ReplicaSet held out of its selector, then it
// takes the canary's template at 4, then the canary goes leaving its
// ReplicaSet, which the stable adopts, then the stable is resumed and its
// ReplicaSet given back, and a new canary is made at 0 with the other
// track. The pods that serve in the end are the canary's, in the
// canary's ReplicaSet, now the stable's, which made none; Git's strategy
// stays on the stable all along. Each pause and resume is followed by the
// Progressing condition the Deployment controller would write for it
// (see notePause).
func TestCanaryStepOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	rounds := k.untilQuiet()

	grow, shrink := roundOf(rounds, "update deployments/api-canary", "replicas=2"), roundOf(rounds, "update deployments/api ", "replicas=2")
	if grow < 0 || shrink <= grow {
		t.Errorf("the stable scaled down for the canary in round %d, the canary grew in round %d: want it after:\n%s", shrink, grow, show(rounds))
	}
	inOrder := [][]string{
		{"update deployments/api-canary", "replicas=4"},
		{"update deployments/api-canary", "paused"},
		{"update deployments/api-canary", "status", "condition=DeploymentPaused"},
		{"update deployments/api ", "replicas=0", "paused"},
		{"update deployments/api ", "status", "condition=DeploymentPaused"},
		{"patch replicasets/api-", `"app":null`},
		{"update deployments/api ", "replicas=4"},
		{"delete deployments/api-canary", "orphan"},
		{"update deployments/api ", "replicas=4"}, // its spec replaced, resumed
		{"update deployments/api ", "status", "condition=DeploymentResumed"},
		{"patch replicasets/api-", `"app":"api"`},
		{"create deployments/api-canary", "replicas=0"},
	}
	from := 0
	for _, want := range inOrder {
		at := roundOf(rounds[from:], want...)
		if at < 0 {
			t.Fatalf("no round from %d on has %q:\n%s", from, want, show(rounds))
		}
		from += at
	}
	if roundOf(rounds, "maxSurge=100%") >= 0 {
		t.Errorf("the promotion surged, want the canary's pods handed over:\n%s", show(rounds))
	}
	api, canary := k.deployment("api"), k.deployment("api-canary")
	pods, err := k.client.CoreV1().Pods("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "api-canary-") {
			t.Errorf("pod %s runs after the promotion: want only the canary's pods, handed over", p.Name)
		}
		if ref := metav1.GetControllerOf(&p); ref == nil || !k.controls(api, ref.Name) {
			t.Errorf("pod %s is controlled by %v, want a ReplicaSet of api", p.Name, ref)
		}
	}
	if len(pods.Items) != 4 {
		t.Errorf("%d pods after the promotion, want 4", len(pods.Items))
	}
	if n := k.controlled(api); n != 2 {
		t.Errorf("api controls %d ReplicaSets after the promotion, want 2: the canary's, and its own of revision 1 given back", n)
	}
	if api.Spec.Paused {
		t.Error("api is paused after the rollout, want it resumed")
	}
	if api.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || *canary.Spec.Replicas != 0 || !canary.Spec.Paused {
		t.Errorf("after the rollout: api %s, api-canary at %d (paused %v); want Healthy, and the new canary idle: 0, paused",
			api.Annotations[contract.AnnotationPhase], *canary.Spec.Replicas, canary.Spec.Paused)
	}
	if got, stable := canary.Spec.Selector.MatchLabels[contract.LabelTrack], api.Spec.Template.Labels[contract.LabelTrack]; got == stable {
		t.Errorf("the new canary's track %q is the stable pods' %q: its selector would select them", got, stable)
	}
	if stable, canary := api.Spec.Strategy, canary.Spec.Strategy; !reflect.DeepEqual(stable, canary) {
		t.Errorf("api's strategy after the rollout %+v, want Git's (api-canary's) %+v", stable, canary)
	}
}

// TestCanaryAbortOrder holds canary "api" at 50% behind a pause, then
// aborts: the canary pods are unlabelled first, so they stop serving at
// once, then stable goes back to 4 and the canary to 0.
func TestCanaryAbortOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryWithSteps("50%, pause, 100%"))
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
