package strategies

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanCanaryStableAloneFails: a revision that runs on the stable
// Deployment alone (the workload's first, created on the stable) fails at
// its progress deadline, as a rolling or blue-green revision does; while
// a canary pod still serves, the promotion waits for the stable.
func TestPlanCanaryStableAloneFails(t *testing.T) {
	desired := canaryDesired(4, DefaultSteps)
	recorded := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678): promoting the stable Deployment"}
	stuck := func(since time.Duration) []Pod {
		var pods []Pod
		for i := range 4 {
			pods = append(pods, Pod{Name: fmt.Sprintf("web-abc-%d", i), NotReadySince: at(since), Hash: h4})
		}
		return pods
	}
	for _, tt := range []struct {
		name    string
		stable  *appsv1.Deployment
		pods    []Pod
		stables []Pod
		phase   Phase
		failed  string
		words   string
		requeue time.Duration
	}{
		{name: "the Deployment controller gave up", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), timedOut), stables: stuck(-5 * time.Second),
			phase: PhaseDegraded, failed: h4, words: "revision 4 failed on the stable Deployment: progress deadline exceeded after 10s"},
		{name: "its pods stalled", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")), stables: stuck(-10 * time.Second),
			phase: PhaseDegraded, failed: h4, words: "failed on the stable Deployment"},
		{name: "its pods are starting", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")), stables: stuck(-4 * time.Second),
			phase: PhaseProgressing, words: "promoting the stable Deployment", requeue: 6 * time.Second},
		{name: "a canary pod serves: the promotion waits", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), timedOut), stables: stuck(-time.Minute),
			pods: []Pod{serving("web-canary-a")}, phase: PhaseProgressing, words: "promoting the stable Deployment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanCanary(desired, recorded, CanaryObserved{Stable: tt.stable, Canary: canaryDeploy(podtemplate.Stamp(v4), withSpecReplicas(0), withPods(0, 0, 0, 0)),
				Pods: tt.pods, StablePods: tt.stables, ServiceSelectsServing: true, Now: t0})
			if plan.Status.Phase != tt.phase || plan.Status.FailedHash != tt.failed || !strings.Contains(plan.Status.Message, tt.words) {
				t.Errorf("status %+v, want phase %s, failed hash %q, message with %q", plan.Status, tt.phase, tt.failed, tt.words)
			}
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}
