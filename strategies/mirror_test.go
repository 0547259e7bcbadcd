package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/contract"
)

// TestMirrorOf: what the rollout controller writes onto the ReplicaSet of
// a Deployment's template after writing the Deployment, in the Deployment
// controller's stead.
func TestMirrorOf(t *testing.T) {
	// The stable web at 3 of 4, its status just changed, revision 2.
	d := deployment(webTemplate("web:v2"), withSpecReplicas(3))
	d.Annotations = map[string]string{AnnotationDeploymentRevision: "2", contract.AnnotationPhase: "Progressing",
		"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	current := func() *appsv1.ReplicaSet {
		rs := ownRS(d, "web-b", 4, 4, 4)
		rs.UID = "b"
		rs.Annotations = map[string]string{AnnotationDeploymentRevision: "2", contract.AnnotationPhase: "Healthy"}
		return rs
	}
	old := ownRS(d, "web-a", 0, 0, 0)
	old.UID = "a"
	old.Spec.Template = webTemplate("web:v1")
	old.Annotations = map[string]string{AnnotationDeploymentRevision: "1"}
	heldOut := func(revision string) *appsv1.ReplicaSet {
		rs := old.DeepCopy()
		rs.UID, rs.OwnerReferences = "h", nil
		rs.Annotations = map[string]string{AnnotationDeploymentRevision: revision, contract.AnnotationHeldOut: "app=web"}
		return rs
	}

	m, ok := MirrorOf(d, []*appsv1.ReplicaSet{old, current()}, true)
	if !ok || m.ReplicaSet.Name != "web-b" || m.Replicas == nil || *m.Replicas != 3 {
		t.Fatalf("MirrorOf = %+v, %v; want web-b scaled to 3", m, ok)
	}
	want := map[string]string{contract.AnnotationPhase: "Progressing", AnnotationDesiredReplicas: "3", AnnotationMaxReplicas: "4"}
	if len(m.Annotations) != len(want) {
		t.Errorf("annotations %v, want %v", m.Annotations, want)
	}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}

	// Another ReplicaSet asking for pods: the count is the Deployment
	// controller's, the status still copied.
	asking := old.DeepCopy()
	asking.Spec.Replicas = ptrTo[int32](1)
	if m, ok := MirrorOf(d, []*appsv1.ReplicaSet{asking, current()}, true); !ok || m.Replicas != nil || len(m.Annotations) != 1 {
		t.Errorf("beside a ReplicaSet at 1: %+v, %v; want the phase alone", m, ok)
	}
	// Nothing differs: nothing to write.
	same := current()
	same.Annotations[contract.AnnotationPhase] = "Progressing"
	same.Spec.Replicas = ptrTo[int32](3)
	if m, ok := MirrorOf(d, []*appsv1.ReplicaSet{old, same}, true); ok {
		t.Errorf("nothing to copy: %+v, want none", m)
	}
	// A ReplicaSet the hand-over holds out of the stable with a later
	// revision: the Deployment controller's next sync gives web-b a new
	// one, so nothing is copied before it; a Deployment that holds none
	// out (holder false) does not count it.
	if m, ok := MirrorOf(d, []*appsv1.ReplicaSet{heldOut("3"), current()}, true); ok {
		t.Errorf("held out at revision 3: %+v, want none", m)
	}
	if _, ok := MirrorOf(d, []*appsv1.ReplicaSet{heldOut("3"), current()}, false); !ok {
		t.Errorf("not the holder: nothing mirrored")
	}
	// Two ReplicaSets of the template: none is the template's.
	twin := current()
	twin.Name, twin.UID = "web-c", "c"
	if m, ok := MirrorOf(d, []*appsv1.ReplicaSet{twin, current()}, true); ok {
		t.Errorf("two of the template: %+v, want none", m)
	}
}

// TestScaleOf: the count the Deployment controller would give the
// ReplicaSet of a Deployment's template, and the surge its max-replicas
// adds.
func TestScaleOf(t *testing.T) {
	rs := func(uid string, n int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(n)}}
	}
	deploy := func(n int32, strategy appsv1.DeploymentStrategy) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptrTo(n), Strategy: strategy}}
	}
	surge := func(v string) appsv1.DeploymentStrategy {
		s := intstr.Parse(v)
		return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s}}
	}
	deleting := rs("a", 4)
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		rs     *appsv1.ReplicaSet
		others []*appsv1.ReplicaSet
		ok     bool
		n      int32
		max    int32
	}{
		{"down, Git's default strategy: 25% of 3 rounded up", deploy(3, appsv1.DeploymentStrategy{}), rs("a", 4), []*appsv1.ReplicaSet{rs("b", 0)}, true, 3, 4},
		{"down, surge 50% of 4", deploy(4, surge("50%")), rs("a", 6), nil, true, 4, 6},
		{"up: the Deployment controller's, from the count it holds", deploy(4, surge("50%")), rs("a", 2), nil, false, 0, 0},
		{"to 0", deploy(0, appsv1.DeploymentStrategy{}), rs("a", 2), nil, true, 0, 0},
		{"recreate surges none", deploy(2, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}), rs("a", 3), nil, true, 2, 2},
		{"at the count already", deploy(4, appsv1.DeploymentStrategy{}), rs("a", 4), nil, false, 0, 0},
		{"another ReplicaSet asks for pods: a rolling update", deploy(4, appsv1.DeploymentStrategy{}), rs("a", 2), []*appsv1.ReplicaSet{rs("b", 1)}, false, 0, 0},
		{"being deleted", deploy(3, appsv1.DeploymentStrategy{}), deleting, nil, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := scaleOf(tt.d, tt.rs, append([]*appsv1.ReplicaSet{tt.rs}, tt.others...))
			if ok != tt.ok || n != tt.n {
				t.Errorf("scaleOf = %d, %v; want %d, %v", n, ok, tt.n, tt.ok)
			}
			if max, _ := rollingBounds(n, tt.d.Spec.Strategy); ok && max != tt.max {
				t.Errorf("max-replicas %d, want %d", max, tt.max)
			}
		})
	}
}

// TestRevisionSettled: the mirror copies onto a ReplicaSet only once the
// Deployment controller has made it its Deployment's latest revision; a
// ReplicaSet a hand-over's stable has just adopted (the canary's revision
// 1 under a stable at 3, or with the stable's history at 2 and 3 given
// back) gets a new revision in that controller's next update anyway.
func TestRevisionSettled(t *testing.T) {
	rs := func(uid, revision string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: "api-" + uid}}
		if revision != "" {
			r.Annotations = map[string]string{AnnotationDeploymentRevision: revision}
		}
		return r
	}
	at := func(revision string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api",
			Annotations: map[string]string{AnnotationDeploymentRevision: revision}}}
	}
	for _, tt := range []struct {
		name string
		d    *appsv1.Deployment
		rs   *appsv1.ReplicaSet
		own  []*appsv1.ReplicaSet
		want bool
	}{
		{"the latest revision, the Deployment's", at("3"), rs("c", "3"), []*appsv1.ReplicaSet{rs("a", "1"), rs("b", "2")}, true},
		{"the only one", at("1"), rs("c", "1"), nil, true},
		{"just adopted: the canary's 1 under a stable at 3", at("3"), rs("c", "1"), nil, false},
		{"just adopted, the history back: 1 under 2 and 3", at("1"), rs("c", "1"), []*appsv1.ReplicaSet{rs("a", "2"), rs("b", "3")}, false},
		{"no revision yet", at("2"), rs("c", ""), nil, false},
	} {
		own := append([]*appsv1.ReplicaSet{tt.rs}, tt.own...)
		if got := revisionSettled(tt.d, tt.rs, own); got != tt.want {
			t.Errorf("%s: revisionSettled = %v, want %v", tt.name, got, tt.want)
		}
	}
}
