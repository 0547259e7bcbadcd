package sync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// scaleTargets returns objs with the HorizontalPodAutoscalers of
// blue-green workloads pointed at the Deployment that serves: Git's HPA
// targets Deployment <name>, which a blue-green workload runs as
// <name>-blue and <name>-green, and the rollout controller points the HPA
// at the active color at each swap. Applied as Git writes it, the HPA would
// be turned back to <name> (which does not run) at every sync, and the
// controller would turn it again: drift both ways. Every other object,
// and an HPA of any other workload, is returned as it is; objs is not
// modified.
func (s *Syncer) scaleTargets(ctx context.Context, objs []manifest.Object) ([]manifest.Object, error) {
	if s.cfg.Deployments == nil {
		return objs, nil
	}
	blueGreen := map[[2]string]bool{} // namespace, name
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		if gvk.Group == "apps" && gvk.Kind == "Deployment" &&
			obj.Obj.GetAnnotations()[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
			blueGreen[[2]string{obj.Obj.GetNamespace(), obj.Obj.GetName()}] = true
		}
	}
	if len(blueGreen) == 0 {
		return objs, nil
	}
	out := make([]manifest.Object, len(objs))
	copy(out, objs)
	for i, obj := range objs {
		if gvk := obj.Obj.GroupVersionKind(); gvk.Group != "autoscaling" || gvk.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(obj.Obj.Object, "spec", "scaleTargetRef")
		ns := obj.Obj.GetNamespace()
		if ref["kind"] != "Deployment" || (ref["apiVersion"] != "" && ref["apiVersion"] != "apps/v1") || !blueGreen[[2]string{ns, ref["name"]}] {
			continue
		}
		target, err := s.cfg.Deployments.ScaleTarget(ctx, ns, ref["name"])
		if err != nil {
			return nil, fmt.Errorf("find the Deployment that HorizontalPodAutoscaler %s scales: %w", obj.Key(), err)
		}
		if target == ref["name"] {
			continue
		}
		moved := obj.Obj.DeepCopy()
		if err := unstructured.SetNestedField(moved.Object, target, "spec", "scaleTargetRef", "name"); err != nil {
			return nil, fmt.Errorf("point HorizontalPodAutoscaler %s at Deployment %s: %w", obj.Key(), target, err)
		}
		out[i] = manifest.Object{Obj: moved, Origin: obj.Origin}
	}
	return out, nil
}
