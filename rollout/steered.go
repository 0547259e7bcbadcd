package rollout

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// The fields of other objects than its Deployments that the controller
// steers, and that a sync's apply of Git's objects keeps as they are live
// (see sync.Checked.Steered): the sync names no strategy and no color.

// steered copies into want, an object a sync is about to apply, the
// fields the controller steers on live: the keys of a Service's selector
// (see keepSelectorKeys) and the color an autoscaler of one of blueGreen,
// the commit's blue-green workloads, targets (see keepScaleTarget).
func steered(want, live *unstructured.Unstructured, blueGreen map[types.NamespacedName]bool) {
	if live == nil {
		return
	}
	switch gvk := want.GroupVersionKind(); {
	case gvk.Group == "" && gvk.Kind == "Service":
		keepSelectorKeys(want, live)
	case gvk.Group == "autoscaling" && gvk.Kind == "HorizontalPodAutoscaler":
		keepScaleTarget(want, live, blueGreen)
	case gvk.Group == "apps" && (gvk.Kind == kindStatefulSet || gvk.Kind == kindDaemonSet):
		keepSet(want, live, gvk.Kind)
	}
}

// keepSet keeps what the controller steers of a StatefulSet or a
// DaemonSet (see keepRolledBack, holdPartition, holdNodes), with each
// template hashed once.
func keepSet(want, live *unstructured.Unstructured, kind string) {
	wantHash, ok := podtemplate.HashOf(want.Object)
	liveHash, liveOK := podtemplate.HashOf(live.Object)
	if !ok || !liveOK {
		return
	}
	if keepRolledBack(want, live, wantHash) {
		wantHash = liveHash
	}
	if want.GetAnnotations()[contract.AnnotationStrategy] != contract.StrategyCanary {
		return
	}
	if kind == kindStatefulSet {
		holdPartition(want, live, wantHash != liveHash)
	} else {
		holdNodes(want, live, wantHash != liveHash)
	}
}

// holdPartition sets the partition of a desired canary StatefulSet: the
// controller lowers it step by step (see strategies.PlanSetCanary). A new
// template goes out with a partition of its whole count, in the same
// write, so that the StatefulSet controller updates no ordinal before the
// first step asks (newTemplate); otherwise the live partition is kept.
// Left to Git's (none), the apply would put it back to 0 and update every
// ordinal at once.
func holdPartition(want, live *unstructured.Unstructured, newTemplate bool) {
	partition, found, err := unstructured.NestedInt64(live.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	if err != nil || !found {
		partition = 0
	}
	if newTemplate {
		replicas, found, _ := unstructured.NestedInt64(want.Object, "spec", "replicas")
		if !found {
			replicas, found, _ = unstructured.NestedInt64(live.Object, "spec", "replicas")
		}
		if !found {
			replicas = 1
		}
		partition = replicas
	}
	_ = unstructured.SetNestedField(want.Object, partition, "spec", "updateStrategy", "rollingUpdate", "partition")
}

// keepRolledBack keeps in a desired StatefulSet or DaemonSet the template
// it runs live when Git's is the one that failed there
// (plimsoll.dev/failed-hash): the controller rolled it back, and applied
// again at every sync it would fail again. A new template in Git goes
// out. It reports whether it kept the live template; wantHash is Git's.
func keepRolledBack(want, live *unstructured.Unstructured, wantHash string) bool {
	failed := live.GetAnnotations()[contract.AnnotationFailedHash]
	liveTemplate, liveFound, _ := unstructured.NestedMap(live.Object, "spec", "template")
	if !liveFound || failed == "" || wantHash != failed {
		return false
	}
	_ = unstructured.SetNestedMap(want.Object, liveTemplate, "spec", "template")
	return true
}

// setTemplate is the kind and template hash of obj when it is a
// StatefulSet or a DaemonSet with a template that reads.
func setTemplate(obj *unstructured.Unstructured) (kind, hash string, ok bool) {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "apps" || (gvk.Kind != kindStatefulSet && gvk.Kind != kindDaemonSet) {
		return "", "", false
	}
	hash, ok = podtemplate.HashOf(obj.Object)
	return gvk.Kind, hash, ok
}

// holdNodes sets the update strategy of a desired canary DaemonSet: a
// new template goes out with OnDelete, in the same write, so that no
// node takes it until the controller deletes its pod (see
// strategies.SetCanary) when the template is new; while the live object is in its steps
// (plimsoll.dev/step) its live strategy is kept, which the controller
// gives back at the end; otherwise Git's goes out.
func holdNodes(want, live *unstructured.Unstructured, newTemplate bool) {
	switch {
	case newTemplate:
		_ = unstructured.SetNestedMap(want.Object, map[string]any{"type": "OnDelete"}, "spec", "updateStrategy")
	case live.GetAnnotations()[contract.AnnotationStep] != "":
		if strategy, found, _ := unstructured.NestedMap(live.Object, "spec", "updateStrategy"); found {
			_ = unstructured.SetNestedMap(want.Object, strategy, "spec", "updateStrategy")
		}
	}
}

// keepSelectorKeys copies into a desired Service the plimsoll.dev/ keys of
// its live selector that Git does not set: the color (blue-green) and
// serving (canary) keys. A Service's selector is an atomic map to
// server-side apply, so applying Git's selector alone would drop them
// and, for a moment, send traffic to every color's or every canary pod.
func keepSelectorKeys(want, live *unstructured.Unstructured) {
	liveSelector, _, _ := unstructured.NestedStringMap(live.Object, "spec", "selector")
	selector, found, err := unstructured.NestedStringMap(want.Object, "spec", "selector")
	if err != nil || !found {
		return // no selector in Git: nothing for the controller's keys to join
	}
	changed := false
	for k, v := range liveSelector {
		if _, set := selector[k]; !set && strings.HasPrefix(k, contract.Prefix) {
			selector[k], changed = v, true
		}
	}
	if changed {
		_ = unstructured.SetNestedStringMap(want.Object, selector, "spec", "selector")
	}
}

// keepScaleTarget keeps in a desired HorizontalPodAutoscaler the color
// its live object targets: Git's HPA of blue-green workload <name> targets
// Deployment <name>, which runs as <name>-blue and <name>-green, and the
// controller points the HPA at the active color at each swap. Applied as
// Git writes it, the HPA would be turned back to <name> (which runs no
// pods) at every sync, and the controller would turn it again: drift both
// ways, and for a moment a color left at Git's count. So the live target
// stays when it is one of the workload's colors; an HPA created, or one
// that names anything else, is applied as Git writes it, and the
// controller turns it to the active color. A workload that left
// blue-green (not in blueGreen) gets Git's target back.
func keepScaleTarget(want, live *unstructured.Unstructured, blueGreen map[types.NamespacedName]bool) {
	ref, _, _ := unstructured.NestedStringMap(want.Object, "spec", "scaleTargetRef")
	liveRef, _, _ := unstructured.NestedStringMap(live.Object, "spec", "scaleTargetRef")
	name := ref["name"]
	if !blueGreen[types.NamespacedName{Namespace: want.GetNamespace(), Name: name}] || !targetsDeployment(ref) || !targetsDeployment(liveRef) {
		return
	}
	if liveRef["name"] == name+contract.SuffixBlue || liveRef["name"] == name+contract.SuffixGreen {
		_ = unstructured.SetNestedField(want.Object, liveRef["name"], "spec", "scaleTargetRef", "name")
	}
}

// targetsDeployment reports whether scaleTargetRef ref names an apps/v1
// Deployment.
func targetsDeployment(ref map[string]string) bool {
	return ref["kind"] == "Deployment" && (ref["apiVersion"] == "" || ref["apiVersion"] == "apps/v1")
}

// blueGreenWorkloads returns the namespace and name of every Deployment of
// desired that the blue-green strategy runs.
func blueGreenWorkloads(desired []*appsv1.Deployment) map[types.NamespacedName]bool {
	names := map[types.NamespacedName]bool{}
	for _, d := range desired {
		if d.Annotations[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
			names[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}] = true
		}
	}
	return names
}
