package sync

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// checkAnalyses refuses a commit whose analyses or references to them are
// wrong, before anything of it is applied: every ConfigMap labelled
// plimsoll.dev/analysis must hold an analysis that parses (see
// analysis.Parse), and every Deployment that names analyses must name
// ones the commit holds in its namespace, with the arguments they need.
// Each refusal names the file, the document and the field.
func checkAnalyses(objs []manifest.Object) error {
	var errs []error
	found := map[string]*analysis.Template{} // by namespace/name
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		if gvk.Group != "" || gvk.Kind != "ConfigMap" {
			continue
		}
		if _, labelled := obj.Obj.GetLabels()[contract.LabelAnalysis]; !labelled {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Obj.Object, cm); err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Reason: fmt.Sprintf("read ConfigMap %s: %v", obj.Key(), err)})
			continue
		}
		t, err := analysis.Parse(cm)
		if err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Reason: fmt.Sprintf("analysis %s: %v", cm.Name, err)})
			continue
		}
		found[cm.Namespace+"/"+cm.Name] = t
	}
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		annotations := obj.Obj.GetAnnotations()
		if gvk.Group != "apps" || gvk.Kind != "Deployment" || !refersToAnalysis(annotations) {
			continue
		}
		ns := obj.Obj.GetNamespace()
		find := func(name string) (*analysis.Template, bool) {
			t, ok := found[ns+"/"+name]
			return t, ok
		}
		if err := analysis.Check(annotations, find); err != nil {
			e := &manifest.Error{Origin: obj.Origin, Reason: err.Error()}
			var ref *analysis.RefError
			if errors.As(err, &ref) {
				e.Field, e.Reason = fmt.Sprintf("metadata.annotations[%q]", ref.Annotation), ref.Reason
			}
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// refersToAnalysis reports whether a Deployment's annotations name
// analyses or give them arguments.
func refersToAnalysis(annotations map[string]string) bool {
	_, names := annotations[contract.AnnotationAnalysis]
	_, args := annotations[contract.AnnotationAnalysisArgs]
	return names || args
}
