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
// labelled and never seen again is dropped a minute later.
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
}
