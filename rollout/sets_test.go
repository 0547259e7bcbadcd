package rollout

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/internal/podtemplate"
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

// TestReplaceFailedPods deletes only the pods of a rolled-back
// StatefulSet that run another revision and are not Ready: never a Ready
// pod, never one of the live revision, never another owner's.
func TestReplaceFailedPods(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "sts-uid", Generation: 2},
		Spec:   appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: "db-good"}}
	pod := func(name, revision string, ready bool, owner types.UID) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		yes := true
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(name),
			Labels:          map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: revision},
			OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: &yes, Kind: "StatefulSet", Name: "db"}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	client := fake.NewClientset(sts,
		pod("db-0", "db-good", true, "sts-uid"),
		pod("db-1", "db-bad", true, "sts-uid"),   // Ready on the failed revision: kept
		pod("db-2", "db-bad", false, "sts-uid"),  // never Ready on the failed revision: replaced
		pod("db-3", "db-good", false, "sts-uid"), // the live revision, starting: kept
		pod("db-4", "db-bad", false, "other-uid"))
	c := New(Config{Client: client})
	if err := c.replaceFailedPods(context.Background(), client, statefulSetOf(sts)); err != nil {
		t.Fatal(err)
	}
	left, err := client.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range left.Items {
		names = append(names, p.Name)
	}
	if want := []string{"db-0", "db-1", "db-3", "db-4"}; !slices.Equal(names, want) {
		t.Errorf("pods left %v, want %v: only db-2 replaced", names, want)
	}
}

// TestStableTemplate finds the template of a hash among the set's own
// controller revisions.
func TestStableTemplate(t *testing.T) {
	template := func(image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: image}}}}
	}
	yes := true
	revision := func(name string, n int64, owner types.UID, t corev1.PodTemplateSpec) *appsv1.ControllerRevision {
		data, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "db"},
			OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: &yes}}}, Revision: n, Data: runtime.RawExtension{Raw: data}}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "sts-uid"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template("db:v2")}}
	client := fake.NewClientset(revision("db-1", 1, "sts-uid", template("db:v1")), revision("db-2", 2, "sts-uid", template("db:v2")),
		revision("other-1", 1, "other-uid", template("db:v0")))
	c := New(Config{Client: client})
	got, err := c.stableTemplate(context.Background(), statefulSetOf(sts), podtemplate.Hash(template("db:v1")))
	if err != nil || got == nil || got.Spec.Containers[0].Image != "db:v1" {
		t.Errorf("stableTemplate of v1 = %v, %v; want the template of db:v1", got, err)
	}
	if got, err := c.stableTemplate(context.Background(), statefulSetOf(sts), podtemplate.Hash(template("db:v0"))); err != nil || got != nil {
		t.Errorf("stableTemplate of another owner's revision = %v, %v; want none", got, err)
	}
}

// TestUpdateNodes deletes, for a canary DaemonSet held at OnDelete, the
// pod of the first node by name that runs an old revision, one node at a
// time: nothing while a pod is not Ready or once enough nodes run the
// template.
func TestUpdateNodes(t *testing.T) {
	yes := true
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent", UID: "ds-uid", Generation: 2,
		Annotations: map[string]string{"plimsoll.dev/strategy": "canary"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, NumberAvailable: 3}}
	revision := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Labels:          map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: name},
			OwnerReferences: []metav1.OwnerReference{{UID: "ds-uid", Controller: &yes}}}, Revision: n}
	}
	pod := func(node, revision string, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent-" + node, UID: types.UID(node),
			Labels:          map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: revision},
			OwnerReferences: []metav1.OwnerReference{{UID: "ds-uid", Controller: &yes, Kind: "DaemonSet", Name: "agent"}}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	for _, tt := range []struct {
		name string
		pods []runtime.Object
		to   int32
		left []string
	}{
		{"every node old: the first by name", []runtime.Object{pod("node-b", "old", true), pod("node-a", "old", true), pod("node-c", "old", true)}, 1,
			[]string{"agent-node-b", "agent-node-c"}},
		{"a new pod not Ready yet: nothing", []runtime.Object{pod("node-a", "new", false), pod("node-b", "old", true), pod("node-c", "old", true)}, 2,
			[]string{"agent-node-a", "agent-node-b", "agent-node-c"}},
		{"enough nodes run it: nothing", []runtime.Object{pod("node-a", "new", true), pod("node-b", "old", true), pod("node-c", "old", true)}, 1,
			[]string{"agent-node-a", "agent-node-b", "agent-node-c"}},
		{"one more node: the next by name", []runtime.Object{pod("node-a", "new", true), pod("node-c", "old", true), pod("node-b", "old", true)}, 2,
			[]string{"agent-node-a", "agent-node-c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append([]runtime.Object{ds, revision("old", 1), revision("new", 2)}, tt.pods...)...)
			c := New(Config{Client: client})
			s := daemonSetOf(ds)
			s.progress.Updated = 0
			if err := c.updateNodes(context.Background(), client, s, tt.to); err != nil {
				t.Fatal(err)
			}
			left, err := client.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range left.Items {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.left) {
				t.Errorf("pods left %v, want %v", names, tt.left)
			}
		})
	}
}
