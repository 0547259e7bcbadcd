package podtemplate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// parseTemplate reads a pod template from YAML, as it would be written in Git.
func parseTemplate(t *testing.T, doc string) corev1.PodTemplateSpec {
	t.Helper()
	var tmpl corev1.PodTemplateSpec
	if err := yaml.UnmarshalStrict([]byte(doc), &tmpl); err != nil {
		t.Fatalf("parse template: %v\n%s", err, doc)
	}
	return tmpl
}

// webTemplate is the pod template of the web workload running image.
func webTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "web",
			Image: image,
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
}
