package strategies

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodReadiness reads the Ready condition, and since when a pod that
// is not Ready has not been: created at t0, the condition last moved at
// t0+30s.
func TestPodReadiness(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	moved := created.Add(30 * time.Second)
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-7d9c556656-w9rcx", CreationTimestamp: metav1.NewTime(created)},
			Status:     corev1.PodStatus{Conditions: conds},
		}
	}
	cond := func(typ corev1.PodConditionType, status corev1.ConditionStatus, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(at)}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantReady bool
		wantSince time.Time
	}{
		{"Ready", pod(cond(corev1.PodReady, corev1.ConditionTrue, moved)), true, time.Time{}},
		{"Ready without a transition time", pod(cond(corev1.PodReady, corev1.ConditionTrue, time.Time{})), true, time.Time{}},
		{"not Ready since the transition", pod(cond(corev1.PodReady, corev1.ConditionFalse, moved)), false, moved},
		{"Ready unknown since the transition", pod(cond(corev1.PodReady, corev1.ConditionUnknown, moved)), false, moved},
		{"not Ready without a transition time: since creation", pod(cond(corev1.PodReady, corev1.ConditionFalse, time.Time{})), false, created},
		{"no Ready condition yet: since creation", pod(cond(corev1.PodScheduled, corev1.ConditionTrue, moved)), false, created},
		{"no conditions: since creation", pod(), false, created},
		{"other conditions first", pod(cond(corev1.PodScheduled, corev1.ConditionTrue, created),
			cond(corev1.ContainersReady, corev1.ConditionTrue, moved), cond(corev1.PodReady, corev1.ConditionTrue, moved)), true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, since := PodReadiness(tt.pod)
			if ready != tt.wantReady || !since.Equal(tt.wantSince) {
				t.Errorf("PodReadiness = %v, %v; want %v, %v", ready, since, tt.wantReady, tt.wantSince)
			}
		})
	}
}
