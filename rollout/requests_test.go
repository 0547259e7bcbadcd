package rollout

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			if err := k.c.SyncDeployments(k.ctx, "c0ffee1", "first", []*appsv1.Deployment{gitDeployment("v1", tt.annotations)}); err != nil {
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
				t.Errorf("%d workloads queued by an unchanged hand-off", n)
			}
		})
	}
}

// TestCanaryWritesEachDeploymentOncePerPlan rolls canary "api" (4
// replicas, steps "25%, pause 1s, 50%, pause 1s, 100%") from v1 to v2 on
// the fake cluster: the hand-off goes out with the first step (the new
// template and the first canary pod in one write of api-canary), no plan
// writes a Deployment twice, and a step that ends starts the next in the
// same write (the step recorded is always the one the message names).
func TestCanaryWritesEachDeploymentOncePerPlan(t *testing.T) {
	annotations := maps.Clone(canaryAnnotations)
	annotations[contract.AnnotationSteps] = "25%, pause 1s, 50%, pause 1s, 100%"
	k := newCluster(t, "api")
	k.toV2(annotations)
	for i := range 30 {
		r := k.round()
		if len(r) == 0 {
			break
		}
		checkOneWriteEach(t, i, r)
		api, canary := k.deployment("api"), k.lookUp("api-canary")
		if i == 0 && (canary == nil || canary.Annotations[contract.AnnotationRevision] != "2" || *canary.Spec.Replicas != 1) {
			t.Errorf("after the hand-off's round: api-canary %v, want revision 2 with 1 replica", canary)
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
// on the fake cluster: the new color is created with the hand-off's status
// at the full count, in one write, and no plan writes a Deployment twice.
func TestBlueGreenHandOffWithFirstPlan(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(blueGreenAnnotations)
	rounds := k.untilQuiet()
	if len(rounds) == 0 || !slices.Contains(rounds[0], "create deployments/api-green replicas=4") || slices.Contains(rounds[0], "update deployments/api-green replicas=0") {
		t.Errorf("the hand-off's round, want api-green created at 4 in one write:\n%s", show(rounds))
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
// of its own, from its budget; see mirrorAnnotations). The fake API
// server copies nothing: every ReplicaSet that runs a Deployment's
// template carries its status once the rollout is quiet.
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
		if copied != 1 {
			t.Errorf("%s has %d ReplicaSets of its template, want 1", name, copied)
		}
	}
}
