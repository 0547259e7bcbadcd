package workload

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestReadTrace reads a canary workload mid-rollout: web at 3 replicas
// with an old ReplicaSet scaled to zero and gone, web-canary at 1, the
// canary pod serving, and Service web whose EndpointSlice holds two ready
// pods and one that is not.
func TestReadTrace(t *testing.T) {
	replicas := func(n int32) *int32 { return &n }
	deploy := func(name, uid, role string, n int32) *appsv1.Deployment {
		d := dep(name, role, "2", contract.PhaseProgressing, "")
		d.UID = types.UID(uid)
		d.Annotations[contract.AnnotationService] = "web"
		d.Spec.Replicas = replicas(n)
		d.Status.ReadyReplicas = n
		return d
	}
	rs := func(name, owner string, desired, running int32) *appsv1.ReplicaSet {
		isController := true
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels:          map[string]string{contract.LabelWorkload: "web"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: owner, UID: types.UID(owner), Controller: &isController}}}}
		r.Spec.Replicas = replicas(desired)
		r.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "web:" + name}}
		r.Status.Replicas, r.Status.ReadyReplicas = running, running
		return r
	}
	pod := func(name, image string, ready corev1.ConditionStatus, serving bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{contract.LabelWorkload: "web"}}}
		if serving {
			p.Labels[contract.LabelServing] = "true"
		}
		p.Spec.Containers = []corev1.Container{{Name: "web", Image: image}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		return p
	}
	endpoint := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
	}
	yes, no := true, false
	client := fake.NewClientset(
		deploy("web", "web", contract.RoleStable, 3), deploy("web-canary", "web-canary", contract.RoleCanary, 1),
		rs("web-old", "web", 0, 0), rs("web-v1", "web", 3, 3), rs("web-canary-v2", "web-canary", 1, 1),
		pod("web-canary-v2-a", "web:v2", corev1.ConditionTrue, true), pod("web-v1-b", "web:v1", corev1.ConditionFalse, false),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web", contract.LabelServing: "true"}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x1", Namespace: "ns",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			Endpoints: []discoveryv1.Endpoint{endpoint("web-v1-c", &yes), endpoint("web-canary-v2-a", nil), endpoint("web-v1-b", &no)}},
	)

	tr, err := ReadTrace(context.Background(), client, "ns", "web")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Workload.Strategy != contract.StrategyCanary || tr.Workload.Primary != "web" || tr.Done() {
		t.Errorf("workload %+v (done %v), want canary web still going", tr.Workload, tr.Done())
	}
	if len(tr.Deployments) != 2 || tr.Deployments[0].Name != "web" || tr.Deployments[1].Name != "web-canary" {
		t.Fatalf("Deployments = %+v, want web and web-canary", tr.Deployments)
	}
	if got := tr.Deployments[0].ReplicaSets; len(got) != 1 || got[0] != (TraceReplicaSet{Name: "web-v1", Image: "web:web-v1", Desired: 3, Ready: 3}) {
		t.Errorf("web's ReplicaSets = %+v, want web-v1 alone (web-old has no pods)", got)
	}
	if d := tr.Deployments[1]; d.Role != contract.RoleCanary || d.Desired != 1 || len(d.ReplicaSets) != 1 {
		t.Errorf("web-canary = %+v", d)
	}
	wantPods := []TracePod{{Name: "web-canary-v2-a", Image: "web:v2", Ready: true, Serving: true}, {Name: "web-v1-b", Image: "web:v1"}}
	if !slices.Equal(tr.Pods, wantPods) {
		t.Errorf("Pods = %+v, want %+v", tr.Pods, wantPods)
	}
	if len(tr.Services) != 1 || tr.Services[0].Name != "web" || tr.Services[0].Selector != "app=web,plimsoll.dev/serving=true" ||
		!slices.Equal(tr.Services[0].ReadyPods, []string{"web-canary-v2-a", "web-v1-c"}) {
		t.Errorf("Services = %+v, want web with web-canary-v2-a and web-v1-c ready", tr.Services)
	}
}

// TestReadTraceMissingService shows a Service the annotations name but
// that does not exist, rather than failing the trace.
func TestReadTraceMissingService(t *testing.T) {
	d := dep("web-blue", contract.RoleActive, "1", contract.PhaseHealthy, contract.ColorBlue)
	d.Annotations[contract.AnnotationActiveService] = "web"
	tr, err := ReadTrace(context.Background(), fake.NewClientset(d), "ns", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Services) != 1 || tr.Services[0].Name != "web" || tr.Services[0].Selector != "(no such Service)" || len(tr.Services[0].ReadyPods) != 0 {
		t.Errorf("Services = %+v, want web as (no such Service) without pods", tr.Services)
	}
	if !tr.Done() {
		t.Errorf("a Healthy workload is not done")
	}
}
