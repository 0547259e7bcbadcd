package strategies

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// The web workload's templates: revision 1 and 3 ran fine, revision 4 never
// becomes ready, revision 5 is the fix; bad failed at some point before.
var (
	v1  = webTemplate("registry.example.com/web:1.0")
	v3  = webTemplate("registry.example.com/web:3.0")
	v4  = webTemplate("registry.example.com/web:does-not-exist")
	v5  = webTemplate("registry.example.com/web:5.0")
	bad = webTemplate("registry.example.com/web:2.0-broken")

	h1, h3, h4, h5, hBad = podtemplate.Hash(v1), podtemplate.Hash(v3), podtemplate.Hash(v4), podtemplate.Hash(v5), podtemplate.Hash(bad)

	rs1 = replicaSet("web-11111", "1", v1, "1", commitV1)
	rs3 = replicaSet("web-33333", "3", v3, "3", commitV3)
	rs4 = replicaSet("web-44444", "4", v4, "4", commitV4)
)

const commitRevert = "7777777fffffffffffffffffffffffffffffffff"

// wantPlan is the outcome a test asserts: the status to record, the
// template to write and, for a rollback, where it goes.
type wantPlan struct {
	phase      Phase
	message    string
	template   TemplateSource
	revision   int64
	hash       string
	failedHash string
	// stableHash is the stable hash recorded: Healthy records its own.
	stableHash string
	// rollbackTo names the ReplicaSet restored, with the plimsoll revision
	// and commit the plan reports; empty: no rollback.
	rollbackTo       *appsv1.ReplicaSet
	rollbackRevision int64
	rollbackCommit   string
}

func TestPlanRolling(t *testing.T) {
	desired4 := Desired{Hash: h4, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV4}
	noAutoRollback := desired4
	noAutoRollback.AutoRollback = false
	healthy3 := Status{Phase: PhaseHealthy, Revision: 3, Hash: h3, Commit: commitV3, Message: "4/4 available"}
	progressing4 := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4, Message: "rolling out revision 4 (commit def5678)"}
	rolledBack4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4,
		Message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 3 (commit abc1234)"}
	failedNoRollback4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4,
		Message: "revision 4 failed: progress deadline exceeded after 10s; auto-rollback is off"}
	updating := withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")
	waiting4 := "revision 4 (commit def5678): waiting for the Deployment to make progress after its progress deadline was exceeded"

	// rs3Contaminated was restored once already: the Deployment controller
	// copied revision 4's status onto it.
	rs3Contaminated := replicaSet("web-33333", "5", v3, "4", commitV4)
	rs3Contaminated.Annotations[contract.AnnotationTemplateHash] = h4
	rsBad := replicaSet("web-22222", "3", bad, "2", "2222222")
	stampedAndMutated := podtemplate.Stamp(v4)
	stampedAndMutated.Spec.Containers = append(stampedAndMutated.Spec.Containers, corev1.Container{Name: "istio-proxy", Image: "istio/proxyv2:1.24"})
	editedByHand := webTemplate("registry.example.com/web:hotfix")

	tests := []struct {
		name     string
		desired  Desired
		recorded Status
		observed RollingObserved
		want     wantPlan
	}{
		{
			name:     "first rollout: no Deployment yet",
			desired:  Desired{Hash: h1, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV1},
			recorded: Status{},
			observed: RollingObserved{},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 1 (commit 1111111)", template: TemplateGit, revision: 1, hash: h1},
		},
		{
			name:     "new revision: the Git template is not live yet",
			desired:  desired4,
			recorded: healthy3,
			observed: RollingObserved{Deployment: deployment(v3), ReplicaSets: []*appsv1.ReplicaSet{rs1, rs3}},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			// 4 replicas, 25% surge: at most 5 pods, 3 of them updated and
			// available, 2 old ones still up.
			name:     "progressing: 3/4 updated, 3 available",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, withPods(5, 3, 3, 3), updating)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "progressing: every pod updated, one old pod still running",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, withPods(5, 4, 4, 4), updating)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			// 4 replicas, 25% unavailable: the controller keeps 3 available;
			// 2 means pods are failing.
			name:     "progressing: fewer available than the strategy keeps",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, withPods(5, 2, 2, 2), updating)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678): below the minimum of 3 available", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "healthy: every pod updated, ready and available",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want:     wantPlan{phase: PhaseHealthy, message: "4/4 available", template: TemplateGit, revision: 4, hash: h4, stableHash: h4},
		},
		{
			name:     "complete counts, but the Deployment controller has not called it complete",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, updating)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "paused mid-rollout",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, paused, withPods(5, 2, 3, 3))},
			want:     wantPlan{phase: PhasePaused, message: "paused at 2/4 updated", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "paused before the new template goes out",
			desired:  desired4,
			recorded: healthy3,
			observed: RollingObserved{Deployment: deployment(v3, paused)},
			want:     wantPlan{phase: PhasePaused, message: "paused before rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "generation not yet observed: the recorded status stays",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, withGeneration(3, 2))},
			want: wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)",
				template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "generation not yet observed: a deadline reported for the older spec is no failure",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, withGeneration(3, 2), timedOut)},
			want: wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)",
				template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "deadline exceeded, auto-rollback on: back to the previous ReplicaSet's template",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut, withPods(5, 2, 3, 3)), ReplicaSets: []*appsv1.ReplicaSet{rs1, rs4, rs3}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 3 (commit abc1234)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4,
				rollbackTo: rs3, rollbackRevision: 3, rollbackCommit: commitV3},
		},
		{
			// Revision 3 replaced revision 1 but was never Healthy: the last
			// Healthy revision, 1, is the one restored.
			name:     "deadline exceeded: back to the stable template, not a newer one never Healthy",
			desired:  desired4,
			recorded: Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, StableHash: h1, Commit: commitV4},
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs1, rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 1 (commit 1111111)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4, stableHash: h1,
				rollbackTo: rs1, rollbackRevision: 1, rollbackCommit: commitV1},
		},
		{
			name:     "failure recorded, rollback not written: back to the stable template",
			desired:  desired4,
			recorded: Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, StableHash: h1, Commit: commitV4, Message: "failed"},
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs1, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 1 (commit 1111111)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4, stableHash: h1,
				rollbackTo: rs1, rollbackRevision: 1, rollbackCommit: commitV1},
		},
		{
			name:     "a new revision keeps the stable hash",
			desired:  desired4,
			recorded: Status{Phase: PhaseHealthy, Revision: 3, Hash: h3, StableHash: h3, Commit: commitV3, Message: "4/4 available"},
			observed: RollingObserved{Deployment: deployment(v3), ReplicaSets: []*appsv1.ReplicaSet{rs1, rs3}},
			want: wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit,
				revision: 4, hash: h4, stableHash: h3},
		},
		{
			name:     "deadline exceeded: a template that failed before is no rollback target",
			desired:  desired4,
			recorded: Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, FailedHash: hBad, Commit: commitV4},
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs1, rsBad, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 1 (commit 1111111)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4,
				rollbackTo: rs1, rollbackRevision: 1, rollbackCommit: commitV1},
		},
		{
			name:     "deadline exceeded: the target carries another revision's status, so its revision is unknown",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3Contaminated, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to the template of ReplicaSet web-33333",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4, rollbackTo: rs3Contaminated},
		},
		{
			name:     "deadline exceeded, auto-rollback off: failed, template stays",
			desired:  noAutoRollback,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 failed: progress deadline exceeded after 10s; auto-rollback is off",
				template: TemplateLive, revision: 4, hash: h4, failedHash: h4},
		},
		{
			name:     "first revision fails: no previous template to roll back to",
			desired:  Desired{Hash: h1, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV1},
			recorded: Status{Phase: PhaseProgressing, Revision: 1, Hash: h1, Commit: commitV1},
			observed: RollingObserved{Deployment: deployment(v1, timedOut, withPods(4, 4, 0, 0)), ReplicaSets: []*appsv1.ReplicaSet{rs1}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 1 failed: progress deadline exceeded after 10s; no previous template to roll back to",
				template: TemplateLive, revision: 1, hash: h1, failedHash: h1},
		},
		{
			name:     "replicas-only change: same revision, the Git count is written",
			desired:  Desired{Hash: h4, Replicas: ptrTo(int32(6)), AutoRollback: true, Commit: commitRevert},
			recorded: Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4},
			observed: RollingObserved{Deployment: deployment(v4)},
			want:     wantPlan{phase: PhaseProgressing, message: "scaling from 4 to 6 replicas", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "replicas left to an autoscaler: the live count is the desired one",
			desired:  Desired{Hash: h4, AutoRollback: true, Commit: commitV4},
			recorded: Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4},
			observed: RollingObserved{Deployment: deployment(v4, withSpecReplicas(7), withPods(7, 7, 7, 7))},
			want:     wantPlan{phase: PhaseHealthy, message: "7/7 available", template: TemplateGit, revision: 4, hash: h4, stableHash: h4},
		},
		{
			name:     "already rolled back: no second rollback, nothing to record",
			desired:  desired4,
			recorded: rolledBack4,
			observed: RollingObserved{Deployment: deployment(v3, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs1, rs3, rs4}},
			want:     wantPlan{phase: PhaseDegraded, message: rolledBack4.Message, template: TemplateLive, revision: 4, hash: h4, failedHash: h4},
		},
		{
			name:     "failure recorded but the rollback not written: roll back now",
			desired:  desired4,
			recorded: rolledBack4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 3 (commit abc1234)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4,
				rollbackTo: rs3, rollbackRevision: 3, rollbackCommit: commitV3},
		},
		{
			name:     "auto-rollback switched on after a failure: roll back now",
			desired:  desired4,
			recorded: failedNoRollback4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 3 (commit abc1234)",
				template: TemplateRollback, revision: 4, hash: h4, failedHash: h4,
				rollbackTo: rs3, rollbackRevision: 3, rollbackCommit: commitV3},
		},
		{
			name:     "failed with auto-rollback off: nothing changes on the next plan",
			desired:  noAutoRollback,
			recorded: failedNoRollback4,
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want:     wantPlan{phase: PhaseDegraded, message: failedNoRollback4.Message, template: TemplateLive, revision: 4, hash: h4, failedHash: h4},
		},
		{
			name:     "Git goes back to a template that failed before: refused, the running revision stays",
			desired:  Desired{Hash: h4, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitRevert},
			recorded: Status{Phase: PhaseHealthy, Revision: 5, Hash: h5, FailedHash: h4, Commit: commitV5},
			observed: RollingObserved{Deployment: deployment(v5)},
			want: wantPlan{phase: PhaseDegraded, message: "template " + h4 + " failed; not started again until Git changes it or a retry",
				template: TemplateLive, revision: 5, hash: h5, failedHash: h4},
		},
		{
			name:     "retry after a rollback: the failed revision goes out again",
			desired:  desired4,
			recorded: Retry(rolledBack4),
			observed: RollingObserved{Deployment: deployment(v3), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "retry while the Deployment still reports the old deadline: wait, no new failure",
			desired:  noAutoRollback,
			recorded: Retry(failedNoRollback4),
			observed: RollingObserved{Deployment: deployment(v4, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want:     wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "retry after a rollback that has not made progress yet: wait, no new failure",
			desired:  desired4,
			recorded: Retry(rolledBack4),
			observed: RollingObserved{Deployment: deployment(v3, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want:     wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "a fix while the Deployment still reports the old deadline: new revision, waiting",
			desired:  Desired{Hash: h5, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV5},
			recorded: rolledBack4,
			observed: RollingObserved{Deployment: deployment(v3, timedOut), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 5 (commit 0555555): waiting for the Deployment to make progress after its progress deadline was exceeded",
				template: TemplateGit, revision: 5, hash: h5, failedHash: h4},
		},
		{
			name:     "a fix on a paused Deployment that still reports the old deadline: waiting, not paused",
			desired:  Desired{Hash: h5, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV5},
			recorded: rolledBack4,
			observed: RollingObserved{Deployment: deployment(v3, timedOut, paused), ReplicaSets: []*appsv1.ReplicaSet{rs3, rs4}},
			want: wantPlan{phase: PhaseDegraded, message: "revision 5 (commit 0555555): waiting for the Deployment to make progress after its progress deadline was exceeded",
				template: TemplateGit, revision: 5, hash: h5, failedHash: h4},
		},
		{
			name:     "after a failure, progress again: tracking resumes",
			desired:  Desired{Hash: h5, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV5},
			recorded: Status{Phase: PhaseDegraded, Revision: 5, Hash: h5, FailedHash: h4, Commit: commitV5, Message: "waiting"},
			observed: RollingObserved{Deployment: deployment(v5, withPods(5, 1, 4, 4), updating)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 5 (commit 0555555)", template: TemplateGit, revision: 5, hash: h5, failedHash: h4},
		},
		{
			name:     "live template edited by hand: Git's goes back",
			desired:  desired4,
			recorded: Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4},
			observed: RollingObserved{Deployment: deployment(editedByHand)},
			want:     wantPlan{phase: PhaseProgressing, message: "rolling out revision 4 (commit def5678)", template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name:     "stamped live template with a sidecar injected by a webhook is still Git's",
			desired:  desired4,
			recorded: progressing4,
			observed: RollingObserved{Deployment: deployment(stampedAndMutated)},
			want:     wantPlan{phase: PhaseHealthy, message: "4/4 available", template: TemplateGit, revision: 4, hash: h4, stableHash: h4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanRolling(tt.desired, tt.recorded, tt.observed)
			checkPlan(t, plan, tt.desired, tt.want)
		})
	}
}

func checkPlan(t *testing.T, plan RollingPlan, desired Desired, want wantPlan) {
	t.Helper()
	wantStatus := Status{
		Phase: want.phase, Revision: want.revision, Hash: want.hash, FailedHash: want.failedHash,
		StableHash: want.stableHash, Commit: desired.Commit, Message: want.message,
	}
	if plan.Status != wantStatus {
		t.Errorf("status:\n got %+v\nwant %+v", plan.Status, wantStatus)
	}
	if plan.Template != want.template {
		t.Errorf("template = %s, want %s", plan.Template, want.template)
	}
	switch {
	case want.rollbackTo == nil && plan.Rollback != nil:
		t.Errorf("rollback to %s planned, want none", plan.Rollback.ReplicaSet)
	case want.rollbackTo != nil && plan.Rollback == nil:
		t.Errorf("no rollback planned, want one to %s", want.rollbackTo.Name)
	case want.rollbackTo != nil:
		rb := plan.Rollback
		if rb.ReplicaSet != want.rollbackTo.Name || rb.Revision != want.rollbackRevision || rb.Commit != want.rollbackCommit {
			t.Errorf("rollback to %s revision %d commit %q, want %s revision %d commit %q",
				rb.ReplicaSet, rb.Revision, rb.Commit, want.rollbackTo.Name, want.rollbackRevision, want.rollbackCommit)
		}
		if rb.FailedHash != want.failedHash {
			t.Errorf("rollback failed hash = %s, want %s", rb.FailedHash, want.failedHash)
		}
		// The ReplicaSet's template, pod-template-hash label removed.
		wantTemplate := want.rollbackTo.Spec.Template.DeepCopy()
		delete(wantTemplate.Labels, LabelPodTemplateHash)
		if !reflect.DeepEqual(rb.Template, *wantTemplate) {
			t.Errorf("rollback template labels %v, image %s; want labels %v, image %s",
				rb.Template.Labels, rb.Template.Spec.Containers[0].Image,
				wantTemplate.Labels, wantTemplate.Spec.Containers[0].Image)
		}
	}
}
