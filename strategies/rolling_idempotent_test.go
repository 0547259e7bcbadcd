package strategies

import (
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestPlanRollingIsIdempotent executes each plan the way the controller
// does (status and template written together) and plans again from the
// new state: the second plan records nothing new and plans no rollback,
// whether the Deployment controller has caught up yet or not.
func TestPlanRollingIsIdempotent(t *testing.T) {
	desired4 := Desired{Hash: h4, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV4}
	noAutoRollback := desired4
	noAutoRollback.AutoRollback = false
	progressing4 := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}

	tests := []struct {
		name     string
		desired  Desired
		recorded Status
		observed RollingObserved
	}{
		{
			name:     "rollback",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
		},
		{
			name:     "failure with auto-rollback off",
			desired:  noAutoRollback,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
		},
		{
			name:     "first revision fails",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs4}},
		},
		{
			name:     "healthy",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4)},
		},
	}
	for _, tt := range tests {
		for _, caughtUp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, Deployment controller caught up %v", tt.name, caughtUp), func(t *testing.T) {
				first := PlanRolling(tt.desired, tt.recorded, tt.observed)
				observed := execute(first, tt.observed, caughtUp)
				second := PlanRolling(tt.desired, first.Status, observed)
				if second.Status != first.Status {
					t.Errorf("second plan records\n %+v\nafter\n %+v", second.Status, first.Status)
				}
				if second.Rollback != nil {
					t.Errorf("second plan rolls back again, to %s", second.Rollback.ReplicaSet)
				}
			})
		}
	}
}

// TestPlanRollingCountsWriteNothing walks the pod counts of one rollout of
// 4 replicas (25% surge and unavailable: at most 5 pods, 3 available) and
// checks that the status changes only when the phase or the warning does:
// every other status would be a write, a new generation and a sync of the
// Deployment controller for nothing the counts in the Deployment's own
// status do not already say.
func TestPlanRollingCountsWriteNothing(t *testing.T) {
	desired4 := Desired{Hash: h4, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV4}
	updating := withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")
	steps := []struct {
		pods, updated, ready, available int32
		want                            string
	}{
		{5, 1, 4, 4, "rolling out revision 4 (commit def5678)"},
		{5, 2, 3, 3, "rolling out revision 4 (commit def5678)"},
		{5, 3, 4, 4, "rolling out revision 4 (commit def5678)"},
		// One new pod fails: 2 available of the 3 the strategy keeps.
		{5, 3, 2, 2, "rolling out revision 4 (commit def5678): below the minimum of 3 available"},
		{5, 3, 2, 2, "rolling out revision 4 (commit def5678): below the minimum of 3 available"},
		{5, 4, 4, 4, "rolling out revision 4 (commit def5678)"},
		{4, 4, 4, 4, "rolling out revision 4 (commit def5678)"},
	}
	recorded := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4, Message: "rolling out revision 4 (commit def5678)"}
	writes := 0
	for _, s := range steps {
		plan := PlanRolling(desired4, recorded, RollingObserved{Deployment: deployment(v4, withPods(s.pods, s.updated, s.ready, s.available), updating)})
		if plan.Status.Phase != PhaseProgressing || plan.Status.Message != s.want {
			t.Errorf("%d/%d updated, %d available: %s %q, want Progressing %q", s.updated, 4, s.available, plan.Status.Phase, plan.Status.Message, s.want)
		}
		if plan.Status != recorded {
			writes++
		}
		recorded = plan.Status
	}
	// Into the warning and out of it.
	if writes != 2 {
		t.Errorf("%d status changes over the rollout, want 2", writes)
	}
}

// execute writes plan into a copy of observed as the controller would:
// a rollback's template replaces the live one, new status annotations are
// written, and either bumps the generation.
// caughtUp says whether the Deployment controller has observed it yet; its
// ProgressDeadlineExceeded condition stays either way, as it does until
// the Deployment makes progress.
func execute(plan RollingPlan, observed RollingObserved, caughtUp bool) RollingObserved {
	live := observed.Deployment.DeepCopy()
	if plan.Template == TemplateRollback {
		live.Spec.Template = *plan.Rollback.Template.DeepCopy()
		live.Generation++
	} else if !maps.Equal(plan.Status.Annotations(), live.Annotations) {
		// On a Deployment, writing annotations bumps the generation too.
		live.Annotations = plan.Status.Annotations()
		live.Generation++
	}
	if caughtUp {
		live.Status.ObservedGeneration = live.Generation
	}
	return RollingObserved{Deployment: live, ReplicaSets: observed.ReplicaSets}
}
