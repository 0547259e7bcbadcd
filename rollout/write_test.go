package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// gitSpecDeployment is a Deployment as Git writes it: no defaults.
func gitSpecDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example.com/web:1.4.2",
					Ports:     []corev1.ContainerPort{{ContainerPort: 8080}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
				}}},
			},
		},
	}
}

// storedAs is git as the API server stores it: every default filled in.
func storedAs(git *appsv1.Deployment) *appsv1.Deployment {
	live := git.DeepCopy()
	live.Spec = podtemplate.DeploymentSpec(live.Spec)
	live.Spec.Template = podtemplate.Defaulted(live.Spec.Template)
	return live
}

// TestSpecHolds covers both ways specHolds answers: the live spec equal
// to Git's with the API server's defaults, and, when it is not, each
// field Git sets compared with the live one.
func TestSpecHolds(t *testing.T) {
	tests := []struct {
		name  string
		live  func(live *appsv1.Deployment)
		want  func(want *appsv1.Deployment)
		holds bool
	}{
		{"stored as written", nil, nil, true},
		{"a field another writer added", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		}, nil, true},
		{"a quantity written another way", nil, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.5")
		}, true},
		{"another image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" }, nil, false},
		{"another count", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) }, nil, false},
		{"a default Git sets otherwise", nil, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		}, false},
		{"paused where Git resumes", func(d *appsv1.Deployment) { d.Spec.Paused = true }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := gitSpecDeployment()
			live := storedAs(want)
			if tt.live != nil {
				tt.live(live)
			}
			if tt.want != nil {
				tt.want(want)
			}
			if got := specHolds(live, want); got != tt.holds {
				t.Errorf("specHolds = %v, want %v", got, tt.holds)
			}
		})
	}
}

// BenchmarkSpecHolds measures a reconcile's question of an unchanged
// Deployment, stored as written (the defaults compared) and with a field
// another writer added (each field Git sets compared).
func BenchmarkSpecHolds(b *testing.B) {
	want := gitSpecDeployment()
	stored := storedAs(want)
	added := stored.DeepCopy()
	added.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
	for _, bc := range []struct {
		name string
		live *appsv1.Deployment
	}{{"stored", stored}, {"added", added}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if !specHolds(bc.live, want) {
					b.Fatal("specHolds = false")
				}
			}
		})
	}
}
