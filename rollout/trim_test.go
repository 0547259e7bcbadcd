package rollout

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

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

// TestTransformSharesLabelStrings passes two pods of one ReplicaSet, as
// decoded apart, through the caches' transform: their label keys and
// values are then one copy each, and read as before.
func TestTransformSharesLabelStrings(t *testing.T) {
	decoded := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-7d4b9c-x", Namespace: "shop", Labels: map[string]string{
			strings.Clone("app"): strings.Clone("web"), strings.Clone("pod-template-hash"): strings.Clone("7d4b9c"),
		}}}
	}
	transform := newTransform(newHandEdits())
	var pods []*corev1.Pod
	for range 2 {
		obj, err := transform(decoded())
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, obj.(*corev1.Pod))
	}
	if !reflect.DeepEqual(pods[0].Labels, decoded().Labels) {
		t.Fatalf("labels after the transform: %v, want %v", pods[0].Labels, decoded().Labels)
	}
	keyOf := func(m map[string]string, k string) string {
		for key := range m {
			if key == k {
				return key
			}
		}
		return ""
	}
	for _, k := range []string{"app", "pod-template-hash"} {
		if unsafe.StringData(keyOf(pods[0].Labels, k)) != unsafe.StringData(keyOf(pods[1].Labels, k)) {
			t.Errorf("label key %q: a copy per pod", k)
		}
		if unsafe.StringData(pods[0].Labels[k]) != unsafe.StringData(pods[1].Labels[k]) {
			t.Errorf("label %q's value: a copy per pod", k)
		}
	}
}

// TestDroppedFromGit notes a Deployment whose labels and annotations
// three writers set, and finds that only those the controller wrote and
// Git no longer sets go: not its own status keys or change cause, not a
// label kubectl set, not the Deployment controller's revision.

// TestDroppedFromGit notes a Deployment whose labels and annotations
// three writers set, and finds that only those the controller wrote and
// Git no longer sets go: not its own status keys or change cause, not a
// label kubectl set, not the Deployment controller's revision.
func TestDroppedFromGit(t *testing.T) {
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop", UID: "uid-1", ResourceVersion: "7",
		Labels: map[string]string{"app": "api", "team": "payments", contract.LabelWorkload: "api", "by-hand": "yes"},
		Annotations: map[string]string{"owner": "alice", "kept": "x", AnnotationChangeCause: "abc1234 v2",
			contract.AnnotationPhase: "Healthy", "deployment.kubernetes.io/revision": "2"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			managedEntry(FieldManager, "", `{"f:metadata":{"f:labels":{"f:app":{},"f:team":{},"f:plimsoll.dev/workload":{}},`+
				`"f:annotations":{"f:owner":{},"f:kept":{},"f:kubernetes.io/change-cause":{}}}}`),
			managedEntry(FieldManager, "status", `{"f:metadata":{"f:annotations":{"f:plimsoll.dev/phase":{}}}}`),
			managedEntry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`),
			managedEntry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`),
		}}}
	git := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop",
		Labels: map[string]string{"app": "api"}, Annotations: map[string]string{"kept": "x", contract.AnnotationStrategy: "canary"}}}

	h := newHandEdits()
	h.note(live.DeepCopy())
	noted := live.DeepCopy()
	noted.ManagedFields = nil // as the cache holds it
	labels, annotations := h.dropped(noted, git)
	if !reflect.DeepEqual(labels, []string{"team"}) || !reflect.DeepEqual(annotations, []string{"owner"}) {
		t.Errorf("dropped = labels %q, annotations %q; want [team] and [owner]", labels, annotations)
	}

	newer := noted.DeepCopy()
	newer.ResourceVersion = "8"
	if labels, annotations := h.dropped(newer, git); labels != nil || annotations != nil {
		t.Errorf("dropped of a version not noted = %q, %q; want nothing", labels, annotations)
	}
	h.forget("shop", "api")
	if labels, annotations := h.dropped(noted, git); labels != nil || annotations != nil {
		t.Errorf("dropped after forget = %q, %q; want nothing", labels, annotations)
	}
}

// BenchmarkNote measures what the cache's transform reads of the managed
// fields of a Deployment as the controller and the Deployment controller
// leave it, at each of its updates.
func BenchmarkNote(b *testing.B) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop", UID: "uid-1", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{
			managedEntry(FieldManager, "", `{"f:metadata":{"f:annotations":{".":{},"f:kubernetes.io/change-cause":{},"f:plimsoll.dev/service":{},`+
				`"f:plimsoll.dev/steps":{},"f:plimsoll.dev/strategy":{}},"f:labels":{".":{},"f:app":{},"f:plimsoll.dev/sync":{},"f:plimsoll.dev/workload":{}}},`+
				`"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":`+
				`{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:annotations":{".":{},`+
				`"f:plimsoll.dev/served":{},"f:plimsoll.dev/template-hash":{}},"f:labels":{".":{},"f:app":{},"f:plimsoll.dev/serving":{},`+
				`"f:plimsoll.dev/workload":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"api\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},`+
				`"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},`+
				`"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},`+
				`"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},`+
				`"f:terminationGracePeriodSeconds":{}}}}}`),
			managedEntry(FieldManager, "status", `{"f:metadata":{"f:annotations":{"f:plimsoll.dev/commit":{},"f:plimsoll.dev/message":{},`+
				`"f:plimsoll.dev/phase":{},"f:plimsoll.dev/revision":{},"f:plimsoll.dev/role":{},"f:plimsoll.dev/template-hash":{}}}}`),
			managedEntry("kube-controller-manager", "status", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}},`+
				`"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},`+
				`"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},`+
				`"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},`+
				`"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`),
		}}}
	h := newHandEdits()
	for b.Loop() {
		h.note(d)
	}
}

// managedEntry is a managed-fields entry of an update by manager, through
// subresource ("" for the object), owning fields.
func managedEntry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}
