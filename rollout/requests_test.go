package rollout

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// canaryAnnotations and blueGreenAnnotations are the plimsoll.dev/ keys
// of a Git Deployment "api" steered through Service "api".
var (
	canaryAnnotations = map[string]string{
		contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "api", contract.AnnotationSteps: "50%, 100%"}
	blueGreenAnnotations = map[string]string{
		contract.AnnotationStrategy: contract.StrategyBlueGreen, contract.AnnotationActiveService: "api", contract.AnnotationScaleDownDelay: "0s"}
)

// canaryWithSteps is canaryAnnotations with steps in place of its own.
func canaryWithSteps(steps string) map[string]string {
	a := maps.Clone(canaryAnnotations)
	a[contract.AnnotationSteps] = steps
	return a
}

// TestUnchangedWorkloadMakesNoRequest: a blue-green and a canary workload
// are handed over and reconciled until they are Healthy (the fake API
// server standing in for the Deployment controller); from then on, a
// reconcile of the unchanged workload, and the same commit handed over
// again, make no API request at all: no GET, no write.
func TestUnchangedWorkloadMakesNoRequest(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		primary     string
	}{
		{"canary", canaryAnnotations, "api"},
		{"blue-green", blueGreenAnnotations, "api-blue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newCluster(t, "api")
			k.handOver("c0ffee1", gitDeployment("v1", tt.annotations))
			k.untilQuiet()
			if phase := k.deployment(tt.primary).Annotations[contract.AnnotationPhase]; phase != contract.PhaseHealthy {
				t.Fatalf("workload %s once quiet, want Healthy", phase)
			}
			requests(k.client) // the read above
			// The same commit handed over again is no change.
			if err := k.c.handOff(k.ctx, "", "c0ffee1", "first", []*appsv1.Deployment{gitDeployment("v1", tt.annotations)}, nil); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := k.c.reconcile(k.ctx, "shop/api"); err != nil {
					t.Fatal(err)
				}
			}
			if got := requests(k.client); len(got) != 0 {
				t.Errorf("reconciles of an unchanged %s workload made %d requests, want 0:\n%s", tt.name, len(got), strings.Join(got, "\n"))
			}
			if n := k.c.queue.Len(); n > 1 {
				t.Errorf("%d workloads queued by an unchanged handoff", n)
			}
		})
	}
}

// TestCanaryWritesEachDeploymentOncePerPlan rolls canary "api" (4
// replicas, steps "25%, pause 1s, 50%, pause 1s, 100%") from v1 to v2 on
// the fake cluster: the handoff goes out with the first step (the new
// template and the first canary pod in one write of api-canary), no plan
// writes a Deployment twice, and a step that ends starts the next in the
// same write (the step recorded is always the one the message names).
func TestCanaryWritesEachDeploymentOncePerPlan(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryWithSteps("25%, pause 1s, 50%, pause 1s, 100%"))
	for i := range 30 {
		r := k.round()
		if len(r) == 0 {
			break
		}
		checkOneWriteEach(t, i, r)
		api, canary := k.deployment("api"), k.lookUp("api-canary")
		if i == 0 && (canary == nil || canary.Annotations[contract.AnnotationRevision] != "2" || *canary.Spec.Replicas != 1) {
			t.Errorf("after the handoff's round: api-canary %v, want revision 2 with 1 replica", canary)
		}
		step, message := api.Annotations[contract.AnnotationStep], api.Annotations[contract.AnnotationMessage]
		if step != "" && strings.HasPrefix(message, "canary step") && !strings.HasPrefix(message, "canary step "+step+"/5") {
			t.Errorf("round %d: step %s recorded, message %q", i, step, message)
		}
	}
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("api %s after the rollout, want Healthy", d.Annotations[contract.AnnotationPhase])
	}
}

// TestBlueGreenHandOffWithFirstPlan rolls blue-green "api" from v1 to v2
// on the fake cluster: the new color is created with the status of the take
// at the full count, in one write, and no plan writes a Deployment twice.
func TestBlueGreenHandOffWithFirstPlan(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(blueGreenAnnotations)
	rounds := k.untilQuiet()
	if len(rounds) == 0 || !slices.Contains(rounds[0], "create deployments/api-green replicas=4") || slices.Contains(rounds[0], "update deployments/api-green replicas=0") {
		t.Errorf("the handoff's round, want api-green created at 4 in one write:\n%s", show(rounds))
	}
	for i, r := range rounds {
		checkOneWriteEach(t, i, r)
	}
	if d := k.deployment("api-green"); d.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || d.Annotations[contract.AnnotationRevision] != "2" {
		t.Errorf("api-green %s at revision %s after the rollout, want Healthy at 2", d.Annotations[contract.AnnotationPhase], d.Annotations[contract.AnnotationRevision])
	}
}

// checkOneWriteEach fails the test when round i's requests r write a
// Deployment more than once.
func checkOneWriteEach(t *testing.T, i int, r []string) {
	t.Helper()
	writes := map[string]int{}
	for _, line := range r {
		if strings.Contains(line, " condition=") {
			continue // the pause's own condition, noted with it (see notePause)
		}
		if verb, rest, _ := strings.Cut(line, " "); verb == "update" || verb == "create" {
			name, _, _ := strings.Cut(rest, " ")
			if writes[name]++; writes[name] > 1 {
				t.Errorf("round %d writes %s twice:\n  %s", i, name, strings.Join(r, "\n  "))
			}
		}
	}
}

// TestStatusCopiedToReplicaSet: the status a plan writes on a Deployment
// is written on the ReplicaSet of its template too, after the
// Deployment, as the Deployment controller would copy it (with an update
// of its own, from its budget; see mirror). The fake Deployment
// controller copies only with a new revision (see revise): every
// ReplicaSet that runs a Deployment's
// template carries its status once the rollout is quiet. The idle canary
// made after the hand-over has none (see strategies.IdleCanary).
func TestStatusCopiedToReplicaSet(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	rounds := k.untilQuiet()
	if roundOf(rounds, "patch replicasets/api-", contract.AnnotationPhase) < 0 {
		t.Errorf("no status was copied to a ReplicaSet:\n%s", show(rounds))
	}
	_, rsets, _ := k.listAll()
	for _, name := range []string{"api", "api-canary"} {
		d := k.deployment(name)
		copied := 0
		for _, rs := range rsets {
			if !metav1.IsControlledBy(rs, d) || !strategies.SameTemplate(rs.Spec.Template, d.Spec.Template) {
				continue
			}
			copied++
			for _, key := range []string{contract.AnnotationPhase, contract.AnnotationRevision, contract.AnnotationMessage} {
				if got, want := rs.Annotations[key], d.Annotations[key]; got != want {
					t.Errorf("ReplicaSet %s of %s: %s %q, want the Deployment's %q", rs.Name, name, key, got, want)
				}
			}
		}
		want := 1
		if strategies.IdleCanary(d) {
			want = 0
		}
		if copied != want {
			t.Errorf("%s (paused %v at %d) has %d ReplicaSets of its template, want %d", name, d.Spec.Paused, *d.Spec.Replicas, copied, want)
		}
	}
}

// TestNoCopyBeforeRevision: the write that resumes a hand-over's stable
// copies nothing onto the canary's ReplicaSet it has just adopted, nor
// does the write that gives the held-out ReplicaSets back: the Deployment
// controller gives that ReplicaSet the revision after theirs, with the
// annotations, in one update of its own (see revisionSettled).
func TestNoCopyBeforeRevision(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	rounds := k.untilQuiet()
	i := roundOf(rounds, "update deployments/api status condition=DeploymentResumed")
	if i < 0 {
		t.Fatalf("the stable was never resumed:\n%s", show(rounds))
	}
	if j := find(rounds[i], "patch replicasets/api-canary-"); j >= 0 {
		t.Errorf("round %d copies onto the adopted ReplicaSet before its revision: %s\n%s", i, rounds[i][j], show(rounds))
	}
	rs := k.replicaSetOf(k.deployment("api"))
	if rs == nil || rs.Annotations[strategies.AnnotationDeploymentRevision] != "2" || rs.Annotations[contract.AnnotationPhase] != string(strategies.PhaseHealthy) {
		t.Errorf("the stable's ReplicaSet %v, want the adopted one at revision 2 (after the stable's 1), Healthy", rs)
	}
}

// TestCountMirroredToReplicaSet rolls canary "api" (4 replicas, steps
// "25%, pause 1s, 50%, pause 1s, 100%") from v1 to v2 on the fake
// cluster, looking after each round, before the fake Deployment
// controller settles anything: a Deployment whose one ReplicaSet asking
// for pods runs its template has that ReplicaSet at its count already
// when the count went down, with the annotations the Deployment
// controller's scale would set (see mirror), so that controller has
// nothing to scale. The stable goes 4, 3, 2, 0 that way; the canary's
// counts go up, which are that controller's to write (see
// strategies.MirrorOf).
func TestCountMirroredToReplicaSet(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryWithSteps("25%, pause 1s, 50%, pause 1s, 100%"))
	scaled := map[string][]int32{}
	for range 30 {
		r := k.round()
		if len(r) == 0 {
			break
		}
		for _, line := range r {
			if strings.HasPrefix(line, "patch replicasets/") && strings.Contains(line, `"replicas":`) {
				name, _, _ := strings.Cut(strings.TrimPrefix(line, "patch replicasets/"), " ")
				var p struct {
					Spec struct{ Replicas int32 } `json:"spec"`
				}
				if err := json.Unmarshal([]byte(line[strings.Index(line, "{"):]), &p); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				scaled[name] = append(scaled[name], p.Spec.Replicas)
			}
		}
		deploys, rsets, _ := k.listAll()
		for _, d := range deploys {
			var own []*appsv1.ReplicaSet
			for _, rs := range rsets {
				if metav1.IsControlledBy(rs, d) {
					own = append(own, rs)
				}
			}
			rs := strategies.TemplateReplicaSet(d, own)
			if rs == nil || slices.ContainsFunc(own, func(o *appsv1.ReplicaSet) bool { return o != rs && *o.Spec.Replicas > 0 }) {
				continue
			}
			// The fake Deployment controller sets no desired-replicas of its own.
			desired, set := rs.Annotations[strategies.AnnotationDesiredReplicas]
			if *rs.Spec.Replicas > *d.Spec.Replicas || *rs.Spec.Replicas == *d.Spec.Replicas && set && desired != strconv.Itoa(int(*d.Spec.Replicas)) {
				t.Errorf("after a round: ReplicaSet %s at %d (desired-replicas %q), its Deployment %s asks for %d",
					rs.Name, *rs.Spec.Replicas, rs.Annotations[strategies.AnnotationDesiredReplicas], d.Name, *d.Spec.Replicas)
			}
		}
	}
	var stable, canary []int32
	for name, counts := range scaled {
		if strings.HasPrefix(name, "api-canary-") {
			canary = append(canary, counts...)
		} else {
			stable = append(stable, counts...)
		}
	}
	if !slices.Equal(stable, []int32{3, 2, 0}) || len(canary) != 0 {
		t.Errorf("counts patched onto ReplicaSets: stable %v, canary %v; want [3 2 0] and none", stable, canary)
	}
	// Each scale is told as the Deployment controller tells its own
	// (written in the background).
	var told []string
	for range 100 {
		list, err := k.client.CoreV1().Events("shop").List(k.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		told = told[:0]
		for _, e := range list.Items {
			if e.Reason == ReasonScalingReplicaSet {
				told = append(told, e.InvolvedObject.Name+": "+e.Message)
			}
		}
		if len(told) >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(told)
	first := func(e string) bool {
		return strings.HasPrefix(e, "api: Scaled down replica set api-") && strings.HasSuffix(e, " from 4 to 3")
	}
	if len(told) != 3 || !slices.ContainsFunc(told, first) {
		t.Errorf("ScalingReplicaSet Events: %q, want 3, the stable's first from 4 to 3", told)
	}
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("api %s after the rollout, want Healthy", d.Annotations[contract.AnnotationPhase])
	}
}

// TestHandOverMovesOwnersItself rolls canary "api" from v1 to v2 on the
// fake cluster, looking after each round, before the fake Deployment
// controller settles anything: the patch that holds a stable ReplicaSet
// out of the selector has also taken it out of the stable's hands, and
// the one that gives it back has put it back in them (see holdOut), so
// that neither waits for that controller's release or adoption; the
// canary's ReplicaSet is the stable's, and the canary's no more, before
// the canary Deployment goes (see handOver), so that the stable waits
// neither for the garbage collector's release nor for that controller's
// adoption.
func TestHandOverMovesOwnersItself(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	held, given, handed := 0, 0, 0
	for range 30 {
		r := k.round()
		if len(r) == 0 {
			break
		}
		for _, line := range r {
			name, body, ok := strings.Cut(strings.TrimPrefix(line, "patch replicasets/"), " ")
			if !ok || !strings.HasPrefix(line, "patch replicasets/") || !strings.Contains(body, "ownerReferences") {
				continue
			}
			rs, err := k.client.AppsV1().ReplicaSets("shop").Get(k.ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			owner := metav1.GetControllerOf(rs)
			switch restore := strings.Contains(body, `"`+contract.AnnotationHeldOut+`":null`); {
			case !strings.Contains(body, contract.AnnotationHeldOut):
				// The canary's ReplicaSet, handed to the stable before
				// the canary Deployment goes.
				if owner == nil || owner.Name != "api" || len(rs.OwnerReferences) != 1 {
					t.Errorf("ReplicaSet %s handed over has owners %v, want api alone", name, rs.OwnerReferences)
				}
				handed++
			case !restore && owner != nil:
				t.Errorf("ReplicaSet %s held out still has controller %s", name, owner.Name)
			case !restore:
				held++
			case owner == nil || owner.Name != "api":
				t.Errorf("ReplicaSet %s given back has controller %v, want api", name, owner)
			default:
				given++
			}
		}
	}
	if held != 1 || given != 1 || handed != 1 {
		t.Errorf("held out %d, gave back %d and handed over %d ReplicaSets, want 1 of each", held, given, handed)
	}
	if d := k.deployment("api"); d.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("api %s after the rollout, want Healthy", d.Annotations[contract.AnnotationPhase])
	}
}

// TestHandOverRefusedLeftToControllers rolls canary "api" from v1 to v2
// on the fake cluster with an API server that refuses the patch handing
// the canary's ReplicaSet to the stable (as one enforcing owner reference
// permissions refuses an identity that may not update
// deployments/finalizers): the canary still goes with the orphan policy,
// the fake garbage collector and Deployment controller hand the
// ReplicaSet over as before, and the revision ends Healthy on the
// canary's ReplicaSet.
func TestHandOverRefusedLeftToControllers(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryAnnotations)
	refused := 0
	k.client.PrependReactor("patch", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if body := string(p.GetPatch()); strings.Contains(body, "ownerReferences") && !strings.Contains(body, contract.AnnotationHeldOut) {
			refused++
			return true, nil, apierrors.NewForbidden(appsv1.Resource("replicasets"), p.GetName(), errors.New("cannot set blockOwnerDeletion"))
		}
		return false, nil, nil
	})
	rounds := k.untilQuiet()
	if refused == 0 {
		t.Fatalf("no hand-over patch was sent; rounds:\n%s", show(rounds))
	}
	roundWith(t, rounds, "delete deployments/api-canary orphan")
	api := k.deployment("api")
	if api.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || api.Spec.Paused {
		t.Errorf("api %s, paused %v after the rollout, want Healthy and resumed", api.Annotations[contract.AnnotationPhase], api.Spec.Paused)
	}
	list, err := k.client.AppsV1().ReplicaSets("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range list.Items {
		if strings.HasPrefix(rs.Name, "api-canary-") && *rs.Spec.Replicas == 4 {
			if owner := metav1.GetControllerOf(&rs); owner == nil || owner.Name != "api" {
				t.Errorf("ReplicaSet %s at 4 has controller %v, want api", rs.Name, owner)
			}
			return
		}
	}
	t.Errorf("no canary ReplicaSet at 4 after the rollout: %v", list.Items)
}

// TestHandOverRestoreRefusedOwner rolls canary "api" from v1 to v2 on the
// fake cluster with an API server that refuses to set an owner reference
// on the ReplicaSets a hand-over gives back to the stable: Forbidden, as
// one enforcing owner reference permissions answers an identity that may
// not update deployments/finalizers, and Invalid. The label alone goes
// back, the fake Deployment controller adopts the ReplicaSet by its
// selector, and the revision ends Healthy with the stable's earlier
// ReplicaSet its history again.
func TestHandOverRestoreRefusedOwner(t *testing.T) {
	for name, refusal := range map[string]error{
		"forbidden": apierrors.NewForbidden(appsv1.Resource("replicasets"), "", errors.New("cannot set blockOwnerDeletion")),
		"invalid":   apierrors.NewInvalid(appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind(), "", nil),
	} {
		t.Run(name, func(t *testing.T) {
			k := newCluster(t, "api")
			k.handOver("c0ffee1", gitDeployment("v1", canaryAnnotations))
			k.untilQuiet()
			v1 := k.replicaSetOf(k.deployment("api"))
			if v1 == nil {
				t.Fatal("api runs no ReplicaSet of its template before the rollout")
			}
			k.handOver("decade2", gitDeployment("v2", canaryAnnotations))
			refused := 0
			k.client.PrependReactor("patch", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				body := string(a.(k8stesting.PatchAction).GetPatch())
				if strings.Contains(body, "ownerReferences") && strings.Contains(body, `"`+contract.AnnotationHeldOut+`":null`) {
					refused++
					return true, nil, refusal
				}
				return false, nil, nil
			})
			rounds := k.untilQuiet()
			if refused == 0 {
				t.Fatalf("no ReplicaSet was given back with its owner; rounds:\n%s", show(rounds))
			}
			api := k.deployment("api")
			if api.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy || api.Spec.Paused {
				t.Errorf("api %s, paused %v after the rollout, want Healthy and resumed", api.Annotations[contract.AnnotationPhase], api.Spec.Paused)
			}
			rs, err := k.client.AppsV1().ReplicaSets("shop").Get(k.ctx, v1.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if owner := metav1.GetControllerOf(rs); owner == nil || owner.Name != "api" || rs.Annotations[contract.AnnotationHeldOut] != "" {
				t.Errorf("ReplicaSet %s after the rollout: controller %v, held out %q; want api's, given back", v1.Name, owner,
					rs.Annotations[contract.AnnotationHeldOut])
			}
		})
	}
}
