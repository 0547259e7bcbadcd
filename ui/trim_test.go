package ui

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestTrim keeps of each object only what a page shows: no environment,
// no last-applied configuration, and no data of a ConfigMap but a sync
// record's inventory and an analysis' document.
func TestTrim(t *testing.T) {
	env := []corev1.EnvVar{{Name: "TOKEN", Value: "s3cret"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"spec":{"env":"s3cret"}}`, contract.AnnotationPhase: "Healthy"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "api", Image: "api:v1", Env: env, Args: []string{"--token=s3cret"}}}
	_, _ = trim(d)
	if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != "api:v1" || c[0].Env != nil || c[0].Args != nil {
		t.Errorf("containers %+v, want the image alone", c)
	}
	if _, ok := d.Annotations[corev1.LastAppliedConfigAnnotation]; ok || d.ManagedFields != nil || d.Annotations[contract.AnnotationPhase] != "Healthy" {
		t.Errorf("annotations %v, managed fields %v: want the status and nothing of kubectl's", d.Annotations, d.ManagedFields)
	}

	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "api:v1", Env: env}}}}
	_, _ = trim(pod)
	if c := pod.Spec.Containers; len(c) != 1 || c[0].Env != nil {
		t.Errorf("pod containers %+v, want the image alone", c)
	}

	tests := []struct {
		name   string
		cm     *corev1.ConfigMap
		keep   string
		annots bool
	}{
		{"a sync's record", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plimsoll-sync-p", Labels: map[string]string{contract.LabelSync: "p"},
			Annotations: map[string]string{contract.AnnotationSyncStatus: "Synced"}},
			Data: map[string]string{"inventory": "h v1 Secret ns db\n", "other": "s3cret"}}, "inventory", true},
		{"an analysis", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "error-rate", Labels: map[string]string{contract.LabelAnalysis: "true", contract.LabelSync: "p"}},
			Data: map[string]string{"analysis.yaml": "metrics: []", "notes": "s3cret"}}, "analysis.yaml", false},
		{"a ConfigMap the sync applied", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{contract.LabelSync: "p"},
			Annotations: map[string]string{"note": "s3cret"}},
			Data: map[string]string{"password": "s3cret"}, BinaryData: map[string][]byte{"key": []byte("s3cret")}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _ = trim(tt.cm)
			if len(tt.cm.BinaryData) != 0 || (tt.keep == "" && tt.cm.Data != nil) || (tt.keep != "" && (len(tt.cm.Data) != 1 || tt.cm.Data[tt.keep] == "")) {
				t.Errorf("data %v, binary %v; want only %q", tt.cm.Data, tt.cm.BinaryData, tt.keep)
			}
			if tt.cm.Annotations["note"] != "" || (tt.annots && tt.cm.Annotations[contract.AnnotationSyncStatus] == "") {
				t.Errorf("annotations %v", tt.cm.Annotations)
			}
		})
	}
}

// TestTrimSets keeps of a StatefulSet and a DaemonSet their status and
// their template's images (no environment, no claim templates), and of a
// set's pod its node but no annotation.
func TestTrimSets(t *testing.T) {
	env := []corev1.EnvVar{{Name: "TOKEN", Value: "s3cret"}}
	containers := []corev1.Container{{Name: "db", Image: "db:v1", Env: env}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{contract.AnnotationPhase: "Healthy"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "plimsoll"}}}}
	sts.Spec.Template.Spec.Containers = containers
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	sts.Status.Conditions = []appsv1.StatefulSetCondition{{Type: "x"}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	ds.Spec.Template.Spec.Containers = containers
	_, _ = trim(sts)
	_, _ = trim(ds)
	for name, spec := range map[string]corev1.PodSpec{"StatefulSet": sts.Spec.Template.Spec, "DaemonSet": ds.Spec.Template.Spec} {
		if c := spec.Containers; len(c) != 1 || c[0].Image != "db:v1" || c[0].Env != nil {
			t.Errorf("%s containers %+v, want the image alone", name, c)
		}
	}
	if sts.Spec.VolumeClaimTemplates != nil || sts.Status.Conditions != nil || sts.ManagedFields != nil || sts.Annotations[contract.AnnotationPhase] != "Healthy" {
		t.Errorf("StatefulSet %+v: want its status and nothing else", sts)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"note": "s3cret"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: containers}}
	_, _ = trim(pod)
	if pod.Spec.NodeName != "node-a" || pod.Annotations != nil || pod.Spec.Containers[0].Env != nil {
		t.Errorf("pod %+v: want its node and image, no annotation", pod)
	}
}
