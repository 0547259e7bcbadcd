package ui

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"plimsoll.dev/plimsoll/contract"
)

// trim is the transform of every informer of the view: the caches keep of
// an object only what a page shows or a history records, so that they
// stay small beside the daemon's own (a pod keeps its metadata but its
// annotations, its first image, its node and its Ready condition; a
// Deployment, StatefulSet or DaemonSet its template's images; an
// EndpointSlice its endpoints' pod and readiness), and nothing the view
// must never show is ever held: of a ConfigMap labelled by a sync, only a
// sync record keeps its data, and of that only the inventory, which names
// objects; an analysis keeps its document, which is in Git. Every object
// loses its managed fields.
//
// The informers call it on fresh objects and again on a re-list: it
// changes them in place, and trimming twice is trimming once.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		image := ""
		if len(o.Spec.Containers) > 0 {
			image = o.Spec.Containers[0].Image
		}
		// The node is a set's pod's: a DaemonSet rolls out by its nodes.
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName}
		if image != "" {
			o.Spec.Containers = []corev1.Container{{Image: image}}
		}
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, Conditions: readyCondition(o.Status.Conditions)}
		// No page reads a pod's annotations, and the pods of sets include
		// those of every DaemonSet of the cluster's own (CNI, proxies),
		// which carry many.
		o.Annotations = nil
	case *appsv1.Deployment:
		o.Spec.Template.Spec = trimPodSpec(o.Spec.Template.Spec)
		o.Status.Conditions = nil
	case *appsv1.StatefulSet:
		o.Spec.Template.Spec = trimPodSpec(o.Spec.Template.Spec)
		o.Spec.VolumeClaimTemplates = nil
		o.Status.Conditions = nil
	case *appsv1.DaemonSet:
		o.Spec.Template.Spec = trimPodSpec(o.Spec.Template.Spec)
		o.Status.Conditions = nil
	case *appsv1.ReplicaSet:
		o.Spec.Template.Spec = trimPodSpec(o.Spec.Template.Spec)
		o.Status.Conditions = nil
	case *corev1.Service:
		o.Spec = corev1.ServiceSpec{Selector: o.Spec.Selector}
		o.Status = corev1.ServiceStatus{}
	case *discoveryv1.EndpointSlice:
		for i := range o.Endpoints {
			e := &o.Endpoints[i]
			e.Addresses, e.Hints, e.Hostname, e.NodeName, e.Zone, e.DeprecatedTopology = nil, nil, nil, nil, nil, nil
		}
		o.Ports = nil
	case *corev1.ConfigMap:
		trimConfigMap(o)
	case *corev1.Event:
		o.Source, o.ReportingController, o.ReportingInstance, o.Related, o.Series, o.Action = corev1.EventSource{}, "", "", nil, nil, ""
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			delete(a, corev1.LastAppliedConfigAnnotation)
		}
	}
	return obj, nil
}

// trimConfigMap keeps of a ConfigMap the data the view reads: an
// analysis' document, a sync record's inventory; nothing of any other.
func trimConfigMap(cm *corev1.ConfigMap) {
	keep := ""
	switch {
	case cm.Labels[contract.LabelAnalysis] != "":
		keep = contract.AnalysisKey
	case cm.Name == contract.NamePrefix+cm.Labels[contract.LabelSync]:
		keep = inventoryKey
	}
	v, ok := cm.Data[keep]
	cm.Data, cm.BinaryData = nil, nil
	if keep != "" && ok {
		cm.Data = map[string]string{keep: v}
	}
	if keep == "" {
		cm.Annotations = nil
	}
}

// trimPodSpec keeps of a pod template's spec its containers' names and
// images: no environment, no command, nothing else.
func trimPodSpec(spec corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{}
	for _, c := range spec.Containers {
		out.Containers = append(out.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return out
}

// readyCondition is the Ready condition of conditions alone, nil when none.
func readyCondition(conditions []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conditions {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return nil
}
