package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSetProgress reads when a StatefulSet's and a DaemonSet's own
// rolling update is done, by table.
func TestSetProgress(t *testing.T) {
	four, two := int32(4), int32(2)
	sts := func(partition *int32, status appsv1.StatefulSetStatus, strategy appsv1.StatefulSetUpdateStrategyType) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.StatefulSetSpec{Replicas: &four,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy}}, Status: status}
		if partition != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}
		}
		return s
	}
	done := appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4, CurrentRevision: "db-b", UpdateRevision: "db-b"}
	midway := appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 4, UpdatedReplicas: 2, AvailableReplicas: 3, CurrentRevision: "db-a", UpdateRevision: "db-b"}
	partitioned := appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 4, UpdatedReplicas: 2, AvailableReplicas: 4, CurrentRevision: "db-a", UpdateRevision: "db-b"}
	stale := done
	stale.ObservedGeneration = 2
	for _, c := range []struct {
		name           string
		s              *set
		observed, done bool
		manual         bool
	}{
		{"StatefulSet, every replica updated and Ready", statefulSetOf(sts(nil, done, appsv1.RollingUpdateStatefulSetStrategyType)), true, true, false},
		{"StatefulSet half way", statefulSetOf(sts(nil, midway, appsv1.RollingUpdateStatefulSetStrategyType)), true, false, false},
		{"StatefulSet, its partition reached", statefulSetOf(sts(&two, partitioned, appsv1.RollingUpdateStatefulSetStrategyType)), true, true, false},
		{"StatefulSet, counts of an older generation", statefulSetOf(sts(nil, stale, appsv1.RollingUpdateStatefulSetStrategyType)), false, true, false},
		{"StatefulSet, OnDelete", statefulSetOf(sts(nil, midway, appsv1.OnDeleteStatefulSetStrategyType)), true, false, true},
		{"DaemonSet on every node", daemonSetOf(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DaemonSetStatus{
			ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}}), true, true, false},
		{"DaemonSet, a node not available", daemonSetOf(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DaemonSetStatus{
			ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2, NumberUnavailable: 1}}), true, false, false},
	} {
		if c.s.progress.Observed != c.observed || c.s.progress.Done != c.done || c.s.manual != c.manual {
			t.Errorf("%s: observed %v, done %v, manual %v; want %v, %v, %v", c.name, c.s.progress.Observed, c.s.progress.Done, c.s.manual, c.observed, c.done, c.manual)
		}
	}
}
