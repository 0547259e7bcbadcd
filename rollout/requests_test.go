package rollout

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
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
