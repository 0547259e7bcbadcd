package workload

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestReadSetTrace reads a StatefulSet at a canary's first step: its
// counts, partition and revisions, the pods it owns (not another's with
// the same labels) with their revision and node, and its Service.
func TestReadSetTrace(t *testing.T) {
	four, three := int32(4), int32(3)
	controller := true
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "db",
		Labels:      map[string]string{contract.LabelSync: "team"},
		Annotations: map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationPhase: "Paused", contract.AnnotationRevision: "2"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &four, ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &three}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 4, UpdatedReplicas: 1, AvailableReplicas: 4, CurrentRevision: "db-v1", UpdateRevision: "db-v2"}}
	pod := func(name, owner, revision string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "db", "controller-revision-hash": revision},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: owner, UID: types.UID(owner), Controller: &controller}}},
			Spec:   corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{Name: "db", Image: "db:" + revision}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	client := fake.NewClientset(sts, pod("db-3", "db", "db-v2"), pod("db-0", "db", "db-v1"), pod("other-0", "other", "x"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}}})
	tr, err := ReadTrace(context.Background(), client, "ns", "db")
	if err != nil {
		t.Fatal(err)
	}
	want := TraceSet{Kind: KindStatefulSet, Name: "db", Desired: 4, Ready: 4, Updated: 1, Available: 4, UpdateStrategy: "RollingUpdate",
		Partition: 3, CurrentRevision: "db-v1", UpdateRevision: "db-v2"}
	if tr.Set == nil || *tr.Set != want {
		t.Errorf("set %+v, want %+v", tr.Set, want)
	}
	if w := tr.Workload; w.Kind != KindStatefulSet || w.Strategy != contract.StrategyCanary || w.Phase != "Paused" {
		t.Errorf("workload %+v, want a canary StatefulSet, Paused", w)
	}
	if len(tr.Pods) != 2 || tr.Pods[0] != (TracePod{Name: "db-0", Image: "db:db-v1", Ready: true, Revision: "db-v1", Node: "node-db-0"}) ||
		tr.Pods[1].Name != "db-3" || tr.Pods[1].Revision != "db-v2" {
		t.Errorf("pods %+v, want db-0 on db-v1 and db-3 on db-v2, not another's", tr.Pods)
	}
	if len(tr.Services) != 1 || tr.Services[0].Name != "db" || tr.Services[0].Selector != "app=db" {
		t.Errorf("services %+v, want db", tr.Services)
	}
}
