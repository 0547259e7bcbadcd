package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// A canary workload's pods are told apart by who owns them, not by their
// names or tracks: a promotion hands the canary's ReplicaSet over to the
// stable Deployment (see strategies.planHandOver), and its pods keep the
// names (<name>-canary-...) and the track label they were made with.

// replicaSetsOf returns the names of w's ReplicaSets that Deployment d
// controls.
func (w *workload) replicaSetsOf(d *appsv1.Deployment) map[string]bool {
	names := map[string]bool{}
	if d == nil {
		return names
	}
	for _, rs := range w.rsets {
		if metav1.IsControlledBy(rs, d) {
			names[rs.Name] = true
		}
	}
	return names
}

// controlledBy reports whether pod p's controller is one of the
// ReplicaSets named in sets.
func controlledBy(p *corev1.Pod, sets map[string]bool) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "ReplicaSet" && sets[ref.Name]
}

// canaryPods returns the pods of canary workload w that are the canary's:
// those with a track label that no ReplicaSet of the stable Deployment
// controls (the canary's own, and those a hand-over left without an
// owner).
func (w *workload) canaryPods() []*corev1.Pod {
	stable := w.replicaSetsOf(w.deployment(""))
	var out []*corev1.Pod
	for _, p := range w.pods {
		if p.Labels[contract.LabelTrack] != "" && !controlledBy(p, stable) {
			out = append(out, p)
		}
	}
	return out
}

// stablePods returns the pods of w that the stable Deployment's
// ReplicaSets control.
func (w *workload) stablePods() []*corev1.Pod {
	stable := w.replicaSetsOf(w.deployment(""))
	var out []*corev1.Pod
	for _, p := range w.pods {
		if controlledBy(p, stable) {
			out = append(out, p)
		}
	}
	return out
}

// replicaSet returns w's ReplicaSet name, nil when the caches have none.
func (w *workload) replicaSet(name string) *appsv1.ReplicaSet {
	for _, rs := range w.rsets {
		if rs.Name == name {
			return rs
		}
	}
	return nil
}
