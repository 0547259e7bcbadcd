package rollout

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
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
// from v1 to v2 on the fake cluster and checks, round by round, the
// actions the planner listed and the controller executed, every one of
// them in its order. Each round writes the stable, then the canary. The
// canary grows to 2 a round before the stable Deployment scales down to 2
// for its pods, which serve from their template (no pod is labelled). On
// promotion the canary's ReplicaSet is handed over to the stable (see
// strategies.planHandOver): the canary grows to 4 and is paused, then the
// stable is paused at 0, then its ReplicaSet is held out of its selector,
// then it takes the canary's template at 4, then the canary's ReplicaSet
// is handed over to it and the canary deleted leaving it, then the stable
// is resumed and its ReplicaSet given back, while a new canary is made
// (its create in the requests: at 0, paused), then both settle. No action
// writes a strategy: Git's stays on the stable all along. Each pause and
// resume is followed by the Progressing condition the Deployment
// controller would write for it (see notePause), asserted on the
// requests of its round. The pods that serve in the end are the canary's,
// in the canary's ReplicaSet, now the stable's, which made none.
func TestCanaryStepOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	v1 := k.replicaSetOf(k.deployment("api")).Name
	rounds := k.playUntilQuiet()

	const stable, canary = "write <name> status role=stable -command", "write -canary status role=canary"
	want := [][]string{
		// 50%: the canary grows first,
		{"write <name> replicas=4 status role=stable -command", "write -canary replicas=2 status role=canary"},
		// then the stable shrinks for it.
		{"write <name> replicas=2 status role=stable -command", "write -canary replicas=2 status role=canary"},
		// The promotion: the canary at 4, paused;
		{stable, "write -canary replicas=4 paused status role=canary"},
		// the stable paused at 0;
		{"write <name> replicas=0 paused status role=stable -command", canary},
		// its ReplicaSet out of its selector;
		{stable, canary, "hold out rs " + v1 + " app=api"},
		// the canary's template on the stable, at 4;
		{"write <name> replicas=4 template cause=* status role=stable -command", canary},
		// the canary's ReplicaSet the stable's, the canary gone without it;
		{stable, "hand over rs api-canary-*", "delete -canary orphan"},
		// the stable resumed, a new canary made, revision 1's ReplicaSet back;
		{"write <name> resumed status role=stable -command", canary, "restore rs " + v1 + " app=api"},
		// both settle.
		{"write <name> replicas=4 status role=stable -command", "write -canary replicas=0 status role=canary"},
	}
	if len(rounds) != len(want) {
		t.Errorf("%d rounds until quiet, want %d:\n%s", len(rounds), len(want), showPlayed(rounds))
	}
	for i := range min(len(rounds), len(want)) {
		exactly(t, fmt.Sprintf("round %d", i), rounds[i].actions, want[i]...)
	}
	for _, p := range rounds {
		if i := slices.IndexFunc(p.actions, func(a string) bool { return strings.Contains(a, " strategy=") }); i >= 0 {
			t.Errorf("%q writes a strategy, want Git's kept and the canary's pods handed over:\n%s", p.actions[i], showPlayed(rounds))
		}
	}
	// The conditions of the pauses and the resume, after them.
	conditions := []struct {
		round          int
		write, noticed []string
	}{
		{2, []string{"update deployments/api-canary", "paused"}, []string{"update deployments/api-canary", "status", "condition=DeploymentPaused"}},
		{3, []string{"update deployments/api ", "replicas=0", "paused"}, []string{"update deployments/api ", "status", "condition=DeploymentPaused"}},
		{7, []string{"update deployments/api ", "replicas=4"}, []string{"update deployments/api ", "status", "condition=DeploymentResumed"}},
	}
	for _, c := range conditions {
		if c.round < len(rounds) {
			before(t, rounds[c.round].requests, c.write, c.noticed)
		}
	}
	if len(rounds) > 7 {
		before(t, rounds[7].requests, []string{"update deployments/api ", "status", "condition=DeploymentResumed"},
			[]string{"create deployments/api-canary", "replicas=0", "paused"})
	}

	api, canaryDeploy := k.deployment("api"), k.deployment("api-canary")
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
	if n := k.controlled(api); n != 2 || !k.controls(api, v1) {
		t.Errorf("api controls %d ReplicaSets after the promotion (%s among them: %v), want 2: the canary's, and its own of revision 1 given back",
			n, v1, k.controls(api, v1))
	}
	if api.Spec.Paused {
		t.Error("api is paused after the rollout, want it resumed")
	}
	if api.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || *canaryDeploy.Spec.Replicas != 0 || !canaryDeploy.Spec.Paused {
		t.Errorf("after the rollout: api %s, api-canary at %d (paused %v); want Healthy, and the new canary idle: 0, paused",
			api.Annotations[contract.AnnotationPhase], *canaryDeploy.Spec.Replicas, canaryDeploy.Spec.Paused)
	}
	if got, stable := canaryDeploy.Spec.Selector.MatchLabels[contract.LabelTrack], api.Spec.Template.Labels[contract.LabelTrack]; got == stable {
		t.Errorf("the new canary's track %q is the stable pods' %q: its selector would select them", got, stable)
	}
	if stable, canary := api.Spec.Strategy, canaryDeploy.Spec.Strategy; !reflect.DeepEqual(stable, canary) {
		t.Errorf("api's strategy after the rollout %+v, want Git's (api-canary's) %+v", stable, canary)
	}
}

// TestCanaryAbortOrder holds canary "api" at 50% behind a pause, then
// aborts: the abort's round executes exactly, in this order, the
// unlabelling of the 2 canary pods, so they stop serving at once, then
// the stable's write back to 4, then the canary's to 0. After it no
// canary pod carries the serving label, the stable is at 4 and the
// canary at 0.
func TestCanaryAbortOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryWithSteps("50%, pause, 100%"))
	k.untilQuiet()
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhasePaused || *d.Spec.Replicas != 2 {
		t.Fatalf("api %s at %d replicas, want Paused at 2", d.Annotations[contract.AnnotationPhase], *d.Spec.Replicas)
	}
	sendCommand(t, k, "api", contract.CommandAbort)
	abort := k.play()
	exactly(t, "the abort's round", abort.actions,
		"unlabel pod api-canary-*",
		"unlabel pod api-canary-*",
		"write <name> replicas=4 status role=stable -command",
		"write -canary replicas=0 status role=canary")

	pods, err := k.client.CoreV1().Pods("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "api-canary-") && p.Labels[contract.LabelServing] != "" {
			t.Errorf("canary pod %s still serving after the abort", p.Name)
		}
	}
	if api, canary := k.deployment("api"), k.deployment("api-canary"); *api.Spec.Replicas != 4 || *canary.Spec.Replicas != 0 {
		t.Errorf("after the abort api at %d, api-canary at %d; want 4 and 0", *api.Spec.Replicas, *canary.Spec.Replicas)
	}
}

// TestBlueGreenSwapOrder rolls blue-green "api" from v1 on blue to v2 on
// green. The swap's round (the first to select green) executes exactly:
// blue's write, which keeps its 4 pods, green's write at 4 with its
// status, then the active Service's selection of green, the preview's,
// and the command's clearing; its requests write the active Service's
// selector. A reconcile before the endpoints follow the swap does not
// write blue below its count: blue still serves. The first round after
// they follow scales blue to 0; green stays at 4.
func TestBlueGreenSwapOrder(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(blueGreenAnnotations)

	const selectGreen = "select active plimsoll.dev/color=green -plimsoll.dev/serving keep=4"
	var swap played
	for range 10 {
		if swap = k.play(); slices.Contains(swap.actions, selectGreen) {
			break
		}
	}
	exactly(t, "the swap's round", swap.actions,
		"write -blue replicas=4 status role=idle",
		"write -green replicas=4 status role=active",
		selectGreen,
		"select preview plimsoll.dev/color=green -plimsoll.dev/serving",
		"clear command")
	if find(swap.requests, "patch services/api", `"green"`) < 0 {
		t.Errorf("the swap's round did not write the active Service's selector:\n%s", showPlayed([]played{swap}))
	}
	// The endpoints have not followed the swap yet (settle moves them):
	// blue still serves, and keeps its count, whether the informers have
	// seen the swap by then (blue written without a count, waiting) or not
	// (the swap's plan again).
	time.Sleep(50 * time.Millisecond)
	if err := k.c.reconcile(k.ctx, "shop/api"); err != nil {
		t.Fatal(err)
	}
	waiting := k.actions()
	if i := slices.IndexFunc(waiting, func(a string) bool {
		return strings.HasPrefix(a, "write -blue replicas=") && !strings.HasPrefix(a, "write -blue replicas=4 ")
	}); i >= 0 || !slices.Contains(waiting, selectGreen) {
		t.Errorf("the reconcile before the endpoints follow executed:\n  %s\nwant blue written without a count below 4, and green selected",
			strings.Join(waiting, "\n  "))
	}
	rest := k.playUntilQuiet()
	if len(rest) == 0 || !slices.Contains(rest[0].actions, "write -blue replicas=0 status role=idle -command") {
		t.Errorf("blue not scaled down once the endpoints left it:\n%s", showPlayed(rest))
	}
	if got := *k.deployment("api-green").Spec.Replicas; got != 4 {
		t.Errorf("green at %d, want 4", got)
	}
	if got := *k.deployment("api-blue").Spec.Replicas; got != 0 {
		t.Errorf("blue at %d, want 0", got)
	}
}

// TestBlueGreenNoActiveColorBothCarryHash: the active Service selects no
// color and both colors carry the live template (a selector edited by
// hand, or a crash between writes). The planner's target color is blue.
// The first round executes exactly: blue's write at 4 as the active
// color, green's as idle without a count (it serves until the Service
// moves), then the active Service's selection of blue (a repair), the
// preview's, and the command's clearing. The next round scales green to
// zero. In the end blue is Healthy at 4 and green at 0.
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

	rounds := k.playUntilQuiet()
	if len(rounds) < 2 {
		t.Fatalf("%d rounds until quiet, want 2 at the least:\n%s", len(rounds), showPlayed(rounds))
	}
	exactly(t, "the first round", rounds[0].actions,
		"write -blue replicas=4 status role=active",
		"write -green status role=idle",
		"select active plimsoll.dev/color=blue -plimsoll.dev/serving keep=4 repair",
		"select preview plimsoll.dev/color=blue -plimsoll.dev/serving",
		"clear command")
	if !slices.Contains(rounds[1].actions, "write -green replicas=0 status role=idle -command") {
		t.Errorf("green not scaled down after the swap:\n%s", showPlayed(rounds))
	}
	if b := k.deployment("api-blue"); *b.Spec.Replicas != 4 || b.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("blue %s at %d, want Healthy at 4", b.Annotations[contract.AnnotationPhase], *b.Spec.Replicas)
	}
	if got := *k.deployment("api-green").Spec.Replicas; got != 0 {
		t.Errorf("green at %d, want 0", got)
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
