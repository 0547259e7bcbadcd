package rollout

import (
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/strategies"
)

// derived returns the Deployment name of workload git, as Git describes it
// but for its name, its selector and template labels (extra added to both)
// and its template, which is tmpl labelled with the workload and stamped.
// replicas is the count to create it with. Git's labels and annotations
// are set on it; the workload annotations are left for stamp.
func derived(git *appsv1.Deployment, name string, extra map[string]string, tmpl corev1.PodTemplateSpec, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   git.Namespace,
			Labels:      maps.Clone(git.Labels),
			Annotations: maps.Clone(git.Annotations),
		},
		Spec: *git.Spec.DeepCopy(),
	}
	setLabel(&d.ObjectMeta, contract.LabelWorkload, git.Name)
	d.Spec.Replicas = &replicas
	sel := metav1.LabelSelector{MatchLabels: map[string]string{}}
	if git.Spec.Selector != nil {
		sel = *git.Spec.Selector.DeepCopy()
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
	}
	maps.Copy(sel.MatchLabels, extra)
	d.Spec.Selector = &sel
	t := *tmpl.DeepCopy()
	for k, v := range extra {
		setLabel(&t.ObjectMeta, k, v)
	}
	d.Spec.Template = strategies.WorkloadTemplate(t, git.Name)
	return d
}

// refresh returns live with Git's labels, annotations and spec fields
// written over it, and without the rollout inputs Git no longer sets
// (see contract.RolloutInputs), keeping live's name, selector, replicas and template:
// what a commit changes on a Deployment that does not take its template.
func refresh(live, git *appsv1.Deployment) *appsv1.Deployment {
	d := live.DeepCopy()
	maps.Copy(d.Labels, git.Labels)
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	maps.Copy(d.Annotations, git.Annotations)
	for _, k := range contract.RolloutInputs {
		if _, inGit := git.Annotations[k]; !inGit {
			delete(d.Annotations, k) // Git dropped it: an analysis removed judges no more
		}
	}
	spec := git.Spec.DeepCopy()
	spec.Replicas, spec.Selector, spec.Template = d.Spec.Replicas, d.Spec.Selector, d.Spec.Template
	spec.Paused = d.Spec.Paused
	d.Spec = *spec
	return d
}

// refreshed is refresh without the labels and annotations that the
// controller wrote from Git onto live and git no longer sets (see
// handEdits.dropped): Git's metadata replaces what Git wrote before,
// where refresh alone only adds to it. nil for a nil live.
func (c *Controller) refreshed(live, git *appsv1.Deployment) *appsv1.Deployment {
	if live == nil {
		return nil
	}
	d := refresh(live, git)
	labels, annotations := c.hand.dropped(live, git)
	dropKeys(d, labels, annotations)
	return d
}

// servingTemplate is Git's template labelled serving: what canary
// workload git's stable Deployment runs of Git's revision, once labelled
// with the workload and stamped (see workloadTemplate), as creating the
// Deployment and promoting a canary write it.
func servingTemplate(git *appsv1.Deployment) corev1.PodTemplateSpec {
	t := *git.Spec.Template.DeepCopy()
	setLabel(&t.ObjectMeta, contract.LabelServing, "true")
	return t
}

// specReplicas is d's spec.replicas (Git's, or a live Deployment's), 1
// when unset.
func specReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func autoRollback(annotations map[string]string) bool {
	return annotations[contract.AnnotationAutoRollback] != "false"
}

// changeCause is "<short commit> <subject>", what kubectl rollout history
// shows for the revision.
func changeCause(commit, subject string) string {
	return strings.TrimSpace(revision.Short(commit) + " " + subject)
}

func setLabel(m *metav1.ObjectMeta, k, v string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[k] = v
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// keepAnnotation copies key from live to obj, so that an apply without a
// new template does not drop it.
func keepAnnotation(obj, live *appsv1.Deployment, key string) {
	if v, ok := live.Annotations[key]; ok {
		setAnnotation(&obj.ObjectMeta, key, v)
	}
}

// annotatedTemplate is d's template, empty for a nil d.
func annotatedTemplate(d *appsv1.Deployment) corev1.PodTemplateSpec {
	if d == nil {
		return corev1.PodTemplateSpec{}
	}
	return d.Spec.Template
}

func annotationsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Annotations
}

// isPrimary reports whether d is the Deployment of a rolling workload, as
// rollingObject marks it.
func isPrimary(d *appsv1.Deployment) bool {
	return d != nil && d.Annotations[contract.AnnotationRole] == string(strategies.RolePrimary)
}
