package strategies

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodReadiness reads a pod's Ready condition. ready is true when the
// condition is True. Otherwise notReadySince says since when the pod has
// not been Ready: the condition's last transition, or the pod's creation
// when the condition is missing or has no transition time (a pod the
// kubelet has not reported on yet). It is zero while the pod is Ready, and
// is what Pod.NotReadySince holds.
func PodReadiness(p *corev1.Pod) (ready bool, notReadySince time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return true, time.Time{}
		}
		if !c.LastTransitionTime.IsZero() {
			return false, c.LastTransitionTime.Time
		}
	}
	return false, p.CreationTimestamp.Time
}
