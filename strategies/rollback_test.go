package strategies

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestPossibleRollback checks which ReplicaSet PossibleRollback names, and,
// for a rolling workload still rolling out, that it is the one PlanRolling
// restores once the live revision runs out of its progress deadline.
func TestPossibleRollback(t *testing.T) {
	progressing4 := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}
	afterFailure3 := progressing4
	afterFailure3.FailedHash = h3
	pending4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4}
	healthy4 := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4}
	paused4 := progressing4
	paused4.Phase = PhasePaused
	stable1 := progressing4
	stable1.StableHash = h1
	all := []*appsv1.ReplicaSet{rs1, rs3, rs4}

	tests := []struct {
		name     string
		recorded Status
		// template is the live one; v4 (revision 4's) when unset.
		template *corev1.PodTemplateSpec
		// annotations are set on the live Deployment besides the status.
		annotations map[string]string
		replicaSets []*appsv1.ReplicaSet
		want        *appsv1.ReplicaSet
		// planned: the planner rolls back on a missed deadline here, and
		// must restore want.
		planned bool
	}{
		{name: "revision 4 rolling out over 3: revision 3's", recorded: progressing4, replicaSets: all, want: rs3, planned: true},
		{name: "the role says rolling whatever the strategy annotation", recorded: progressing4,
			annotations: map[string]string{contract.AnnotationRole: contract.RolePrimary, contract.AnnotationStrategy: contract.StrategyCanary},
			replicaSets: all, want: rs3, planned: true},
		{name: "paused: a resume can still fail it", recorded: paused4, replicaSets: all, want: rs3, planned: true},
		{name: "the stable template before the newer revision 3", recorded: stable1, replicaSets: all, want: rs1, planned: true},
		{name: "the recorded failed hash is skipped", recorded: afterFailure3, replicaSets: all, want: rs1, planned: true},
		{name: "failed, rollback not written yet", recorded: pending4, replicaSets: all, want: rs3, planned: true},
		{name: "nothing older to restore", recorded: progressing4, replicaSets: []*appsv1.ReplicaSet{rs4}, want: nil, planned: true},
		{name: "auto-rollback off", recorded: progressing4,
			annotations: map[string]string{contract.AnnotationAutoRollback: "false"}, replicaSets: all, want: nil, planned: true},
		{name: "rolled back already (or refused again): the restored template is not rolled back from", recorded: pending4, template: &v3,
			replicaSets: all, want: nil, planned: true},
		{name: "Healthy: nothing in flight can fail", recorded: healthy4, replicaSets: all, want: nil},
		{name: "a blue-green color falls back to the other color", recorded: progressing4,
			annotations: map[string]string{contract.AnnotationRole: contract.RolePreview, contract.AnnotationStrategy: contract.StrategyBlueGreen},
			replicaSets: all, want: nil},
		{name: "a canary's stable Deployment keeps its own template", recorded: progressing4,
			annotations: map[string]string{contract.AnnotationRole: contract.RoleStable, contract.AnnotationStrategy: contract.StrategyCanary},
			replicaSets: all, want: nil},
		{name: "no role yet, canary in Git", recorded: progressing4,
			annotations: map[string]string{contract.AnnotationStrategy: contract.StrategyCanary}, replicaSets: all, want: nil},
	}
	name := func(rs *appsv1.ReplicaSet) string {
		if rs == nil {
			return "none"
		}
		return rs.Name
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := v4
			if tt.template != nil {
				template = *tt.template
			}
			live := deployment(template, timedOut)
			live.Annotations = tt.recorded.Annotations()
			maps.Copy(live.Annotations, tt.annotations)
			got := PossibleRollback(live, tt.replicaSets)
			if got != tt.want {
				t.Errorf("PossibleRollback = %s, want %s", name(got), name(tt.want))
			}
			if !tt.planned {
				return
			}
			desired := Desired{Hash: h4, Replicas: ptrTo(liveReplicasN), Commit: commitV4,
				AutoRollback: live.Annotations[contract.AnnotationAutoRollback] != "false"}
			plan := PlanRolling(desired, tt.recorded, RollingObserved{Deployment: live, ReplicaSets: tt.replicaSets})
			restored := "none"
			if plan.Rollback != nil {
				restored = plan.Rollback.ReplicaSet
			}
			if restored != name(tt.want) {
				t.Errorf("PlanRolling restores %s after the deadline, PossibleRollback names %s", restored, name(tt.want))
			}
		})
	}
	if PossibleRollback(nil, all) != nil {
		t.Error("PossibleRollback of no Deployment names a ReplicaSet")
	}
}
