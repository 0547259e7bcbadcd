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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
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
			live.Spec = podtemplate.DeploymentSpec(live.Spec)
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
