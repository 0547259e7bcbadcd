package sync

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// whyNoBlueGreen says, by kind, why a workload of it cannot run blue-green:
// a second color of it would have nothing of its own to run on.
var whyNoBlueGreen = map[string]string{
	"StatefulSet": "a StatefulSet's pods own its ordinals and their volumes, and a second color would need the same claims or start empty; use rolling or canary",
	"DaemonSet":   "a DaemonSet runs one pod on each node, and a second color would run two on every node, each holding the node's ports and devices; use rolling or canary",
}

// checkSetStrategies refuses a StatefulSet or a DaemonSet whose strategy
// is blue-green, or whose progress deadline is not a positive duration,
// naming its file, document and annotation: before anything of the
// commit is applied.
func checkSetStrategies(objs []manifest.Object) error {
	var errs []error
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		why, set := whyNoBlueGreen[gvk.Kind]
		if gvk.Group != "apps" || !set {
			continue
		}
		a := obj.Obj.GetAnnotations()
		if a[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
			errs = append(errs, &manifest.Error{Origin: obj.Origin,
				Field:  fmt.Sprintf("metadata.annotations[%q]", contract.AnnotationStrategy),
				Reason: fmt.Sprintf("%s %s/%s cannot be rolled out blue-green: %s", gvk.Kind, obj.Obj.GetNamespace(), obj.Obj.GetName(), why)})
		}
		if a[contract.AnnotationStrategy] == contract.StrategyCanary {
			errs = append(errs, checkCanarySet(obj)...)
		}
		if v, ok := a[contract.AnnotationProgressDeadline]; ok {
			if d, err := time.ParseDuration(v); err != nil || d <= 0 {
				errs = append(errs, &manifest.Error{Origin: obj.Origin,
					Field:  fmt.Sprintf("metadata.annotations[%q]", contract.AnnotationProgressDeadline),
					Reason: fmt.Sprintf("%q is not a positive duration (such as 10m or 90s)", v)})
			}
		}
	}
	return errors.Join(errs...)
}

// checkCanarySet refuses a StatefulSet or a DaemonSet rolled by canary
// whose steps do not read, or whose update strategy leaves plimsoll
// nothing to steer: OnDelete, or a StatefulSet's partition of Git's own.
func checkCanarySet(obj manifest.Object) []error {
	var errs []error
	kind, name := obj.Obj.GetKind(), obj.Obj.GetNamespace()+"/"+obj.Obj.GetName()
	if v, ok := obj.Obj.GetAnnotations()[contract.AnnotationSteps]; ok {
		if _, err := strategies.ParseSteps(v); err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Field: fmt.Sprintf("metadata.annotations[%q]", contract.AnnotationSteps), Reason: err.Error()})
		}
	}
	how := "updates its ordinals by their partition: OnDelete has none"
	if kind == "DaemonSet" {
		how = "holds its nodes at OnDelete itself, step by step, and gives Git's rolling update back at the end"
	}
	if t, _, _ := unstructured.NestedString(obj.Obj.Object, "spec", "updateStrategy", "type"); t == "OnDelete" {
		errs = append(errs, &manifest.Error{Origin: obj.Origin, Field: "spec.updateStrategy.type",
			Reason: fmt.Sprintf("%s %s is rolled out by canary, which %s; use RollingUpdate", kind, name, how)})
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(obj.Obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition"); set && kind == "StatefulSet" {
		errs = append(errs, &manifest.Error{Origin: obj.Origin, Field: "spec.updateStrategy.rollingUpdate.partition",
			Reason: fmt.Sprintf("StatefulSet %s is rolled out by canary, which sets its partition step by step; remove the partition from Git", name)})
	}
	return errs
}
