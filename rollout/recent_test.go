package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRecentWrites follows the active Service of a blue-green workload
// through a swap: the patch's answer (resourceVersion 12) is read in
// place of the cache's copy from before it (11) until the cache holds 12
// or later, or a minute has passed, or the Service was recreated; a pod
// labelled and never seen again is dropped a minute later; a labelled pod
// is held trimmed, as the cache holds it.
func TestRecentWrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	service := func(uid types.UID, rv, color string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: uid, ResourceVersion: rv},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"plimsoll.dev/color": color}},
		}
	}
	color := func(s *corev1.Service) string { return s.Spec.Selector["plimsoll.dev/color"] }
	r := newRecentWrites[*corev1.Service](clk, time.Minute)

	r.wrote(service("a", "12", "green"))
	if got := color(r.newest(service("a", "11", "blue"))); got != "green" {
		t.Errorf("cache behind the patch: selects %s, want green (as patched)", got)
	}
	if got := color(r.newest(service("b", "11", "blue"))); got != "blue" {
		t.Errorf("Service recreated: selects %s, want blue (the cache's)", got)
	}
	r.wrote(service("a", "12", "green"))
	if got := color(r.newest(service("a", "13", "blue"))); got != "blue" {
		t.Errorf("cache past the patch: selects %s, want blue (the cache's, newer)", got)
	}
	if got := color(r.newest(service("a", "11", "blue"))); got != "blue" {
		t.Errorf("after the cache caught up: selects %s, want blue; the write should be forgotten", got)
	}
	r.wrote(service("a", "12", "green"))
	clk.Step(time.Minute + time.Second)
	if got := color(r.newest(service("a", "11", "blue"))); got != "blue" {
		t.Errorf("a minute later: selects %s, want blue (the cache's)", got)
	}

	pods := newRecentWrites[*corev1.Pod](clk, time.Minute)
	pods.wrote(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", ResourceVersion: "5"}})
	clk.Step(2 * time.Minute)
	pods.wrote(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-2", ResourceVersion: "6"}})
	if len(pods.byKey) != 1 {
		t.Errorf("%d pods remembered after a pod was labelled two minutes after another; want 1", len(pods.byKey))
	}
	var none *corev1.Pod
	pods.wrote(none)
	if len(pods.byKey) != 1 {
		t.Errorf("a failed write (nil) was remembered: %d pods, want 1", len(pods.byKey))
	}

	// A labelled pod comes back whole from the patch; it is held as the
	// cache holds pods, with its Ready condition and labels only.
	pods.wrote(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-3", ResourceVersion: "8",
			Labels:        map[string]string{"plimsoll.dev/serving": "true"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "plimsoll-rollout"}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:v2"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	})
	held := pods.newest(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-3", ResourceVersion: "7"}})
	switch {
	case held.Labels["plimsoll.dev/serving"] != "true":
		t.Errorf("labelled pod held as %+v, want the patch's answer", held.ObjectMeta)
	case len(held.Spec.Containers) != 0 || held.ManagedFields != nil:
		t.Errorf("labelled pod held with %d containers and %d managedFields entries, want both trimmed",
			len(held.Spec.Containers), len(held.ManagedFields))
	case len(held.Status.Conditions) != 1 || held.Status.Conditions[0].Type != corev1.PodReady:
		t.Errorf("labelled pod held with conditions %+v, want Ready alone", held.Status.Conditions)
	}
}
