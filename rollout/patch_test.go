package rollout

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// TestPauseCondition: the Progressing condition noted with a pause or a
// resume is the one the Deployment controller would write, by its rule
// (checkPausedConditions): none without a progress deadline or over a
// deadline exceeded, none when the condition already says so, and the
// transition time kept from a condition of the same status.
func TestPauseCondition(t *testing.T) {
	then, now := metav1.NewTime(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)), metav1.NewTime(time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC))
	progressing := func(status corev1.ConditionStatus, reason string) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, LastUpdateTime: then, LastTransitionTime: then},
		}
	}
	tests := []struct {
		name       string
		paused     bool
		deadline   *int32
		conditions []appsv1.DeploymentCondition
		reason     string // "" for no condition to note
		transition metav1.Time
	}{
		{"paused while progressing", true, new(int32(600)), progressing(corev1.ConditionTrue, "NewReplicaSetAvailable"), reasonPaused, now},
		{"paused with no condition yet", true, new(int32(600)), nil, reasonPaused, now},
		{"paused again", true, new(int32(600)), progressing(corev1.ConditionUnknown, reasonPaused), "", now},
		{"resumed", false, new(int32(600)), progressing(corev1.ConditionUnknown, reasonPaused), reasonResumed, then},
		{"resumed and progressing", false, new(int32(600)), progressing(corev1.ConditionTrue, "ReplicaSetUpdated"), "", now},
		{"paused past its deadline", true, new(int32(600)), progressing(corev1.ConditionFalse, strategies.ReasonProgressDeadlineExceeded), "", now},
		{"paused with no deadline", true, nil, progressing(corev1.ConditionTrue, "NewReplicaSetAvailable"), "", now},
		{"paused with an endless deadline", true, new(int32(math.MaxInt32)), nil, "", now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{
				Spec:   appsv1.DeploymentSpec{Paused: tt.paused, ProgressDeadlineSeconds: tt.deadline},
				Status: appsv1.DeploymentStatus{Conditions: tt.conditions},
			}
			cond, ok := pauseCondition(d, now)
			switch {
			case tt.reason == "" && ok:
				t.Fatalf("noted %+v, want no condition", cond)
			case tt.reason == "":
				return
			case !ok:
				t.Fatalf("noted no condition, want %s", tt.reason)
			}
			if cond.Type != appsv1.DeploymentProgressing || cond.Status != corev1.ConditionUnknown || cond.Reason != tt.reason {
				t.Errorf("noted %s=%s (%s), want Progressing=Unknown (%s)", cond.Type, cond.Status, cond.Reason, tt.reason)
			}
			if !cond.LastUpdateTime.Equal(&now) || !cond.LastTransitionTime.Equal(&tt.transition) {
				t.Errorf("noted at %v, transition %v; want %v, %v", cond.LastUpdateTime, cond.LastTransitionTime, now, tt.transition)
			}
		})
	}
}

// TestSpecWrittenOnlyWhenStoredDiffers: a write whose spec leaves out
// what the API server defaults (Git's `strategy: {}`, no history limit,
// no progress deadline) over a live Deployment stored with those defaults
// is a write of the status alone, to the status subresource, which makes
// no new generation; a strategy Git's default would put back (a surge of
// 100% from a promotion) still goes with the spec.
func TestSpecWrittenOnlyWhenStoredDiffers(t *testing.T) {
	surge := intstr.FromString("100%")
	tests := []struct {
		name        string
		live        func(*appsv1.Deployment)
		spec        bool
		subresource string
	}{
		{"stored with the defaults", func(*appsv1.Deployment) {}, false, "status"},
		{"a surge to put back", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = &surge }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := gitDeployment("v1", maps.Clone(canaryAnnotations))
			git.Namespace = "shop"
			live := git.DeepCopy()
			live.Spec = defaulted(live.Spec)
			tt.live(live)
			client := fake.NewClientset(live)
			c := New(Config{Client: client, SyncName: "default", Log: slog.New(slog.DiscardHandler)})
			want := git.DeepCopy()
			want.Annotations[contract.AnnotationMessage] = "rolling out revision 2"
			if err := c.writeDeployment(context.Background(), live, want); err != nil {
				t.Fatal(err)
			}
			var patches []k8stesting.PatchAction
			for _, a := range client.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok {
					patches = append(patches, p)
				}
			}
			if len(patches) != 1 {
				t.Fatalf("%d patches, want 1", len(patches))
			}
			p := patches[0]
			if got := strings.Contains(string(p.GetPatch()), `"spec"`); got != tt.spec || p.GetSubresource() != tt.subresource {
				t.Errorf("patch to %q carries the spec %v, want %v to %q:\n%s", p.GetSubresource(), got, tt.spec, tt.subresource, p.GetPatch())
			}
		})
	}
}

// TestRevisionSettled: the mirror copies onto a ReplicaSet only once the
// Deployment controller has made it its Deployment's latest revision; a
// ReplicaSet a hand-over's stable has just adopted (the canary's revision
// 1 under a stable at 3, or with the stable's history at 2 and 3 given
// back) gets a new revision in that controller's next update anyway.
func TestRevisionSettled(t *testing.T) {
	rs := func(uid, revision string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: "api-" + uid}}
		if revision != "" {
			r.Annotations = map[string]string{strategies.AnnotationDeploymentRevision: revision}
		}
		return r
	}
	at := func(revision string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api",
			Annotations: map[string]string{strategies.AnnotationDeploymentRevision: revision}}}
	}
	for _, tt := range []struct {
		name string
		d    *appsv1.Deployment
		rs   *appsv1.ReplicaSet
		own  []*appsv1.ReplicaSet
		want bool
	}{
		{"the latest revision, the Deployment's", at("3"), rs("c", "3"), []*appsv1.ReplicaSet{rs("a", "1"), rs("b", "2")}, true},
		{"the only one", at("1"), rs("c", "1"), nil, true},
		{"just adopted: the canary's 1 under a stable at 3", at("3"), rs("c", "1"), nil, false},
		{"just adopted, the history back: 1 under 2 and 3", at("1"), rs("c", "1"), []*appsv1.ReplicaSet{rs("a", "2"), rs("b", "3")}, false},
		{"no revision yet", at("2"), rs("c", ""), nil, false},
	} {
		own := append([]*appsv1.ReplicaSet{tt.rs}, tt.own...)
		if got := revisionSettled(tt.d, tt.rs, own); got != tt.want {
			t.Errorf("%s: revisionSettled = %v, want %v", tt.name, got, tt.want)
		}
	}
}
