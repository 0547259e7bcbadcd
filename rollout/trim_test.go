package rollout

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestTrimKeepsWhatThePlannersRead trims pods in each state the planners
// tell apart and checks that they see each one as before, with the spec,
// the other conditions and managedFields gone; and that a Deployment
// keeps its spec and loses only managedFields.
func TestTrimKeepsWhatThePlannersRead(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	notReady := metav1.NewTime(created.Add(30 * time.Second))
	deleting := metav1.NewTime(created.Add(time.Minute))
	pod := func(name string, labels, annotations map[string]string, ready *corev1.ConditionStatus, deleted *metav1.Time) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels, Annotations: annotations,
				CreationTimestamp: created, DeletionTimestamp: deleted, ResourceVersion: "42",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v2"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
				Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true}}},
		}
		if ready != nil {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: *ready, LastTransitionTime: notReady})
		}
		return p
	}
	yes, no := corev1.ConditionTrue, corev1.ConditionFalse
	serving := map[string]string{contract.LabelServing: "true", contract.LabelTrack: contract.TrackCanary}
	served := map[string]string{contract.AnnotationServed: "true"}
	pods := []*corev1.Pod{
		pod("ready-serving", serving, nil, &yes, nil),
		pod("not-ready", nil, nil, &no, nil),
		pod("unreported", nil, nil, nil, nil),
		pod("unlabelled", nil, served, &yes, nil),
		pod("deleting", serving, nil, &yes, &deleting),
	}
	for _, p := range pods {
		before := podState(p)
		obj, err := trim(p.DeepCopy())
		if err != nil {
			t.Fatalf("trim %s: %v", p.Name, err)
		}
		trimmed := obj.(*corev1.Pod)
		if after := podState(trimmed); after != before {
			t.Errorf("pod %s: the planners see %+v after the trim, %+v before", p.Name, after, before)
		}
		if trimmed.ManagedFields != nil || len(trimmed.Spec.Containers) != 0 || trimmed.Status.PodIP != "" || len(trimmed.Status.Conditions) > 1 {
			t.Errorf("pod %s keeps what no planner reads: %+v", p.Name, trimmed)
		}
		again, _ := trim(trimmed.DeepCopy())
		if !reflect.DeepEqual(again, trimmed) {
			t.Errorf("pod %s: trimming twice differs from trimming once", p.Name)
		}
	}

	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Annotations: map[string]string{contract.AnnotationPhase: "Healthy"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v2"}}}}},
	}
	want := d.DeepCopy()
	want.ManagedFields = nil
	if obj, _ := trim(d); !reflect.DeepEqual(obj, want) {
		t.Errorf("Deployment after the trim:\n %+v\nwant\n %+v", obj, want)
	}
}
