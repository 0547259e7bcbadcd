package strategies

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

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

const (
	webUID        = types.UID("6f1c1f3e-web")
	commitV1      = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitV3      = "abc1234cccccccccccccccccccccccccccccccccc"
	commitV4      = "def5678ddddddddddddddddddddddddddddddddd"
	commitV5      = "0555555eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	deadline      = int32(10)
	liveReplicasN = int32(4)
)

// deployment is the live Deployment web carrying template as the API
// server returns it: the controller's workload label added, generation 2
// observed, 4 replicas all updated and available, rollout complete.
func deployment(template corev1.PodTemplateSpec, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	live := template.DeepCopy()
	live.Labels[contract.LabelWorkload] = "web"
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: webUID, Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptrTo(liveReplicasN),
			Template:                *live,
			ProgressDeadlineSeconds: ptrTo(deadline),
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2},
	}
	withPods(4, 4, 4, 4)(d)
	withCondition(corev1.ConditionTrue, ReasonNewReplicaSetAvailable)(d)
	for _, opt := range opts {
		opt(d)
	}
	return d
}

// withPods sets the status counts: pods in all, updated, ready, available.
func withPods(replicas, updated, ready, available int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.Replicas = replicas
		d.Status.UpdatedReplicas = updated
		d.Status.ReadyReplicas = ready
		d.Status.AvailableReplicas = available
		d.Status.UnavailableReplicas = max(liveReplicas(d)-available, 0)
	}
}

// withCondition sets the Progressing condition.
func withCondition(status corev1.ConditionStatus, reason string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason},
		}
	}
}

// timedOut is the Deployment controller giving up on the rollout.
func timedOut(d *appsv1.Deployment) {
	withCondition(corev1.ConditionFalse, ReasonProgressDeadlineExceeded)(d)
}

func paused(d *appsv1.Deployment) { d.Spec.Paused = true }

// withGeneration sets metadata.generation and status.observedGeneration.
func withGeneration(generation, observed int64) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Generation, d.Status.ObservedGeneration = generation, observed
	}
}

func withSpecReplicas(n int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(n) }
}

// replicaSet is a ReplicaSet of the web Deployment at Deployment controller
// revision rev, for template, as the Deployment controller writes it: the
// pod-template-hash label on its template, and the Deployment's plimsoll
// annotations copied while it was the newest (plimsollRevision "": none).
func replicaSet(name string, rev string, template corev1.PodTemplateSpec, plimsollRevision, commit string) *appsv1.ReplicaSet {
	tmpl := template.DeepCopy()
	tmpl.Labels[contract.LabelWorkload] = "web"
	tmpl.Labels[LabelPodTemplateHash] = name[len("web-"):]
	annotations := map[string]string{AnnotationDeploymentRevision: rev}
	if plimsollRevision != "" {
		annotations[contract.AnnotationRevision] = plimsollRevision
		annotations[contract.AnnotationCommit] = commit
		annotations[contract.AnnotationTemplateHash] = podtemplate.Hash(template)
	}
	isController := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: webUID, Controller: &isController,
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Template: *tmpl},
	}
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }

// ownRS is a ReplicaSet that Deployment d controls, of d's template,
// asking for spec pods and reporting replicas of them, available of them
// available, its latest spec observed.
func ownRS(d *appsv1.Deployment, name string, spec, replicas, available int32) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels[LabelPodTemplateHash] = name[strings.LastIndex(name, "-")+1:]
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Generation: 3,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(spec), Template: *tmpl},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 3, Replicas: replicas,
			ReadyReplicas: available, AvailableReplicas: available},
	}
}
