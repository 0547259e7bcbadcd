package strategies

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Helpers shared by the blue-green and canary planner tests. The workload
// is web; revision 3 (v3, commit abc1234) is the one running, revision 4
// (v4, commit def5678) the one going out; see rolling_test.go.

// t0 is the time of planning in the tests: 12:00:00 UTC.
var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// at is t0 plus d: at(30*time.Second) is 12:00:30.
func at(d time.Duration) time.Time { return t0.Add(d) }

// progressing4 is the status the controller records when it takes
// revision 4 from Git, before the first plan.
var progressing4 = Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}

// degraded4 is revision 4 after it failed: its hash is the failed one.
var degraded4 = Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4,
	Message: "revision 4 failed: progress deadline exceeded after 10s"}

// withMessage is s with message m.
func withMessage(s Status, m string) Status {
	s.Message = m
	return s
}

// desiredN is what Git asks of web at revision 4 with n replicas and
// auto-rollback on.
func desiredN(n int32) Desired {
	return Desired{Hash: h4, Replicas: ptrTo(n), AutoRollback: true, Commit: commitV4}
}

// sized makes a Deployment ask for n pods and run n, all updated, ready and
// available.
func sized(n int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		withSpecReplicas(n)(d)
		withPods(n, n, n, n)(d)
	}
}

// named sets the Deployment's name.
func named(name string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Name = name }
}

// withTemplateLabel sets a label on the Deployment's pod template.
func withTemplateLabel(key, value string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Labels[key] = value }
}

// rolling makes the Deployment report a rollout under way (Progressing
// True, reason ReplicaSetUpdated), as it does while its counts are short.
func rolling(d *appsv1.Deployment) {
	withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")(d)
}

// replicasOrNil prints a replica count to write, "unchanged" for nil.
func replicasOrNil(p *int32) any {
	if p == nil {
		return "unchanged"
	}
	return *p
}

// checkMessage fails unless message contains every one of words.
func checkMessage(t *testing.T, message string, words []string) {
	t.Helper()
	for _, w := range words {
		if !strings.Contains(message, w) {
			t.Errorf("message %q does not say %q", message, w)
		}
	}
}

// checkStatus compares the recorded status with the wanted phase,
// revision, hash and failed hash, and looks for the message's key words.
// The commit is always desired's.
func checkStatus(t *testing.T, got Status, desired Desired, phase Phase, revision int64, hash, failed string, words []string) {
	t.Helper()
	want := Status{Phase: phase, Revision: revision, Hash: hash, FailedHash: failed, Commit: desired.Commit, Message: got.Message}
	if got != want {
		t.Errorf("status:\n got %+v\nwant %+v (message aside)", got, want)
	}
	checkMessage(t, got.Message, words)
}

// TestReplicaSetRuns reads a Deployment's pods from the ReplicaSet
// controller's report only when that report describes the Deployment as
// it is: its template's ReplicaSet alone asks for pods, at its count, and
// was observed at that count.
func TestReplicaSetRuns(t *testing.T) {
	d := stableDeploy(v3, sized(3), withGeneration(5, 4)) // the Deployment controller lags
	other := deployment(v4, named("web-canary"), func(d *appsv1.Deployment) { d.UID = "canary-uid" })
	own := ownRS(d, "web-5f6d7c8b9a", 3, 3, 3)
	unobserved := ownRS(d, "web-5f6d7c8b9a", 3, 4, 4)
	unobserved.Generation = 4
	for _, tt := range []struct {
		name  string
		rsets []*appsv1.ReplicaSet
		want  bool
	}{
		{"its template's ReplicaSet at its count, observed", []*appsv1.ReplicaSet{own}, true},
		{"an older ReplicaSet at 0 beside it", []*appsv1.ReplicaSet{own, ownRS(stableDeploy(v4, sized(3)), "web-7c8d9e0f1a", 0, 0, 0)}, true},
		{"no ReplicaSet of its template yet", nil, false},
		{"its ReplicaSet asks for 4, the Deployment for 3", []*appsv1.ReplicaSet{ownRS(d, "web-5f6d7c8b9a", 4, 4, 4)}, false},
		{"its ReplicaSet's count not yet observed", []*appsv1.ReplicaSet{unobserved}, false},
		{"an older ReplicaSet still runs a pod", []*appsv1.ReplicaSet{own, ownRS(stableDeploy(v4, sized(3)), "web-7c8d9e0f1a", 0, 1, 1)}, false},
		{"an older ReplicaSet still asks for one", []*appsv1.ReplicaSet{own, ownRS(stableDeploy(v4, sized(3)), "web-7c8d9e0f1a", 1, 0, 0)}, false},
		{"the ReplicaSet of another Deployment", []*appsv1.ReplicaSet{ownRS(other, "web-canary-5f6d7c8b9a", 3, 3, 3)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := replicaSetRuns(tt.rsets, d)
			if ok != tt.want {
				t.Fatalf("replicaSetRuns = %v, want %v", ok, tt.want)
			}
			if ok && st.Replicas != 3 {
				t.Errorf("reported %d pods, want the ReplicaSet's 3", st.Replicas)
			}
		})
	}
}
