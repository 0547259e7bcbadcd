package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSpecGenerations follows one Deployment through the controller's
// writes: status writes over generation 7 (which the Deployment
// controller observed) present 8 and then 9 as 7; a scale by the
// controller starts a new spec at 10; a write by someone else, or a
// Deployment recreated under the same name, is taken as it is.
func TestSpecGenerations(t *testing.T) {
	deploy := func(uid types.UID, generation int64, replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: uid, Generation: generation},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 7},
		}
	}
	s := newSpecGenerations()
	seen := func(d *appsv1.Deployment) int64 { return s.of(d).Generation }

	s.wrote(deploy("a", 7, 4), deploy("a", 8, 4)) // a status write
	if got := seen(deploy("a", 8, 4)); got != 7 {
		t.Errorf("after a status write over 7: generation %d presented, want 7", got)
	}
	s.wrote(s.of(deploy("a", 8, 4)), deploy("a", 9, 4)) // another, made from what observe presented
	if got := seen(deploy("a", 9, 4)); got != 7 {
		t.Errorf("after two status writes over 7: generation %d presented, want 7", got)
	}
	if got := seen(deploy("a", 10, 6)); got != 10 {
		t.Errorf("a generation the controller did not write: %d presented, want 10", got)
	}
	if got := seen(deploy("b", 9, 4)); got != 9 {
		t.Errorf("a Deployment recreated under the same name: %d presented, want 9", got)
	}
	s.wrote(s.of(deploy("a", 9, 4)), deploy("a", 10, 3)) // a scale
	if got := seen(deploy("a", 10, 3)); got != 10 {
		t.Errorf("after a scale: generation %d presented, want 10", got)
	}
	d := deploy("a", 10, 3)
	if s.of(d) != d {
		t.Error("an unchanged Deployment was copied; want the cache's object")
	}
	s.forget("shop", "api")
	s.wrote(nil, deploy("a", 11, 3))
	if got := seen(deploy("a", 11, 3)); got != 11 {
		t.Errorf("after forget: generation %d presented, want 11", got)
	}
}

// TestIntendPastWhatWasObserved: a Deployment presented at generation 7
// (status writes took it to 9, and the Deployment controller observed 9)
// that is to take a new template reads as not yet observed: 10, not 8,
// so that the old template's conditions (a deadline exceeded) are not
// read as the new one's. A status-only intent, written without a new
// generation, keeps 7.
func TestIntendPastWhatWasObserved(t *testing.T) {
	two, three := int32(2), int32(3)
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-green", Generation: 7},
		Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: appsv1.DeploymentStatus{ObservedGeneration: 9}}
	for _, tt := range []struct {
		name string
		want *appsv1.Deployment
		gen  int64
	}{
		{"a new spec", &appsv1.Deployment{ObjectMeta: live.ObjectMeta, Spec: appsv1.DeploymentSpec{Replicas: &three}}, 10},
		{"status only", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-green", Annotations: map[string]string{"a": "b"}},
			Spec: appsv1.DeploymentSpec{Replicas: &two}}, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &workload{deploys: map[string]*appsv1.Deployment{}}
			w.intend(live, tt.want)
			if got := w.deploys["api-green"]; got.Generation != tt.gen || got.Status.ObservedGeneration != 9 {
				t.Errorf("intended generation %d observed %d, want %d observed 9", got.Generation, got.Status.ObservedGeneration, tt.gen)
			}
		})
	}
}
