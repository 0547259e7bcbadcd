package strategies

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanRollingRetryOnStuckPods covers a retry that came before the
// Deployment controller acted on the rollback: the failed template goes
// back onto its ReplicaSet while that still runs its pod, which never
// becomes Ready. The controller sees no progress and never lifts
// ProgressDeadlineExceeded (written at 12:00:30), so the condition alone
// would keep the workload waiting for ever. With a deadline of 10s, the
// pod not Ready since 12:00:00 fails the revision again at 12:00:40, a
// whole deadline after the condition was written, not at once.
func TestPlanRollingRetryOnStuckPods(t *testing.T) {
	desired4 := Desired{Hash: h4, Replicas: ptrTo(int32(4)), AutoRollback: true, Commit: commitV4}
	rolledBack4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4,
		Message: "revision 4 (commit def5678) failed: progress deadline exceeded after 10s; rolled back to revision 3 (commit abc1234)"}
	waiting4 := "revision 4 (commit def5678): waiting for the Deployment to make progress after its progress deadline was exceeded"
	noted := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	notedAt := func(d *appsv1.Deployment) {
		timedOut(d)
		d.Status.Conditions[1].LastUpdateTime = metav1.NewTime(noted)
	}
	stuck := []Pod{{Name: "web-44444-a", NotReadySince: noted.Add(-30 * time.Second)}}
	sets := []*appsv1.ReplicaSet{rs3, rs4}

	tests := []struct {
		name    string
		live    *appsv1.Deployment
		pods    []Pod
		now     time.Time
		want    wantPlan
		requeue time.Duration
	}{
		{
			name: "half a deadline after the condition: waiting, planned again at the deadline",
			live: deployment(v4, notedAt, withPods(5, 1, 4, 4)), pods: stuck, now: noted.Add(5 * time.Second),
			want:    wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
			requeue: 5 * time.Second,
		},
		{
			name: "a deadline after the condition: failed again, rolled back",
			live: deployment(v4, notedAt, withPods(5, 1, 4, 4)), pods: stuck, now: noted.Add(10 * time.Second),
			want: wantPlan{phase: PhaseDegraded, message: rolledBack4.Message, template: TemplateRollback,
				revision: 4, hash: h4, failedHash: h4, rollbackTo: rs3, rollbackRevision: 3, rollbackCommit: commitV3},
		},
		{
			name: "a pod that became not Ready after the condition: its own deadline",
			live: deployment(v4, notedAt, withPods(5, 1, 4, 4)),
			pods: []Pod{{Name: "web-44444-b", NotReadySince: noted.Add(20 * time.Second)}}, now: noted.Add(25 * time.Second),
			want:    wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
			requeue: 5 * time.Second,
		},
		{
			name: "the retried template not observed yet: waiting, whatever the pods",
			live: deployment(v4, notedAt, withGeneration(3, 2)), pods: stuck, now: noted.Add(time.Minute),
			want: wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
		},
		{
			name: "no pod to judge (an unstamped template): waiting on the condition",
			live: deployment(v4, notedAt), now: noted.Add(time.Minute),
			want: wantPlan{phase: PhaseDegraded, message: waiting4, template: TemplateGit, revision: 4, hash: h4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanRolling(desired4, Retry(rolledBack4), RollingObserved{Deployment: tt.live, ReplicaSets: sets, Pods: tt.pods, Now: tt.now})
			checkPlan(t, plan, desired4, tt.want)
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}

// TestFailedNowAfterRetry is the same for the canary and the colors: a
// workload recorded Degraded fails again only on a pod that stays not
// Ready a whole deadline after the Deployment controller's last word.
func TestFailedNowAfterRetry(t *testing.T) {
	noted := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	d := deployment(podtemplate.Stamp(v4), timedOut)
	d.Status.Conditions[1].LastUpdateTime = metav1.NewTime(noted)
	pods := []Pod{{Name: "web-canary-a", NotReadySince: noted.Add(-time.Minute)}}
	retried := Retry(Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4})
	progressing := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}

	for _, tt := range []struct {
		name     string
		recorded Status
		now      time.Time
		failed   bool
		until    time.Duration
	}{
		{"progressing: the condition and the old pod fail it at once", progressing, noted, true, 0},
		{"retried, half a deadline after the condition: not yet", retried, noted.Add(4 * time.Second), false, 6 * time.Second},
		{"retried, a deadline after the condition: failed", retried, noted.Add(10 * time.Second), true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := failedNow(d, pods, h4, tt.recorded, tt.now); got != tt.failed {
				t.Errorf("failedNow = %v, want %v", got, tt.failed)
			}
			if got := untilStalled(d, pods, h4, tt.recorded, tt.now); got != tt.until {
				t.Errorf("untilStalled = %v, want %v", got, tt.until)
			}
		})
	}
}

// TestFailedNowCountsTheRevisionsOwnPods: the pods of a revision held
// failed (auto-rollback off) still run beside those of the fix written over
// it, not Ready for long past the deadline. They do not fail the fix; a
// pod of the fix's own template that stalls does.
func TestFailedNowCountsTheRevisionsOwnPods(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 5, 0, 0, time.UTC)
	d := deployment(podtemplate.Stamp(v4), withGeneration(3, 2))
	progressing := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}
	held := Pod{Name: "web-green-old-a", NotReadySince: now.Add(-time.Hour), Hash: "0ld0ld0ld0"}
	for _, tt := range []struct {
		name   string
		pods   []Pod
		failed bool
		until  time.Duration
	}{
		{"only the failed revision's pods stall", []Pod{held}, false, 0},
		{"the fix's pod is starting", []Pod{held, {Name: "web-green-new-a", NotReadySince: now.Add(-4 * time.Second), Hash: h4}}, false, 6 * time.Second},
		{"the fix's own pod stalls", []Pod{held, {Name: "web-green-new-a", NotReadySince: now.Add(-10 * time.Second), Hash: h4}}, true, 0},
		{"a pod of an unknown template counts", []Pod{{Name: "web-green-x", NotReadySince: now.Add(-time.Hour)}}, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := failedNow(d, tt.pods, h4, progressing, now); got != tt.failed {
				t.Errorf("failedNow = %v, want %v", got, tt.failed)
			}
			if got := untilStalled(d, tt.pods, h4, progressing, now); got != tt.until {
				t.Errorf("untilStalled = %v, want %v", got, tt.until)
			}
		})
	}
}
