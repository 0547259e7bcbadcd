package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/internal/intern"
)

// trim is the transform of every informer of the rollout controller: what
// the caches hold of an object is what the planners read of it. Pods are
// most of the cache (1,000 workloads of 10 pods: 10,000 pods beside 3,000
// Deployments and ReplicaSets), and the controller reads of a pod only its
// metadata (name, labels, annotations, creation and deletion) and its
// Ready condition: its spec and the rest of its status go. Every object
// loses metadata.managedFields, a record per field manager that can be as
// large as the object (what a Deployment's tell of kubectl is noted first,
// see handEdits). A Deployment is written back from its cached copy
// (Update), and an Update without managedFields leaves the server's as
// they are.
//
// The informers call trim on objects freshly decoded, before caching
// them, and again on objects already trimmed (a re-list): it changes them
// in place, and trimming twice is trimming once.
func trim(obj any) (any, error) {
	trimInPlace(obj)
	return obj, nil
}

// trimInPlace is trim without the transform's signature: the controller
// also trims what its writes return before it remembers them (see
// recentWrites), so that a planner reads the same of an object whichever
// copy it gets, and a labelled pod is not held whole.
func trimInPlace(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.Spec = corev1.PodSpec{}
		p.Status = corev1.PodStatus{Phase: p.Status.Phase, Conditions: readyOnly(p.Status.Conditions)}
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
}

// readyOnly returns the Ready condition of conditions, nil when none.
func readyOnly(conditions []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conditions {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{c}
		}
	}
	return nil
}

// setTrim installs trim on informers not yet started, noting in hand
// what the Deployments' managed fields tell before trim drops them, and
// keeping one copy of the label and annotation keys and short values of
// all the caches (a pod's app and pod-template-hash, a Deployment's
// plimsoll.dev/ keys, each decoded anew with every object); it fails
// only on a started informer, a defect.
func setTrim(hand *handEdits, informers ...cache.SharedIndexInformer) {
	transform := newTransform(hand)
	for _, informer := range informers {
		if err := informer.SetTransform(transform); err != nil {
			panic(fmt.Sprintf("set the rollout controller's cache transform: %v", err))
		}
	}
}

// newTransform returns the caches' transform (see setTrim).
func newTransform(hand *handEdits) cache.TransformFunc {
	strs := intern.New()
	return func(obj any) (any, error) {
		hand.note(obj)
		if m, err := meta.Accessor(obj); err == nil {
			strs.Map(m.GetLabels())
			strs.Map(m.GetAnnotations())
		}
		return trim(obj)
	}
}
