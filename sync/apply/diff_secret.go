package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// Markers that stand for a Secret's values in a diff.
const (
	// SecretValueMarker is a value the sync leaves as it is.
	SecretValueMarker = "[redacted]"
	// SecretValueBefore and SecretValueAfter are a value the sync
	// changes, adds or removes, before and after.
	SecretValueBefore = "[redacted: old value]"
	SecretValueAfter  = "[redacted: new value]"
	// lastApplied is the annotation kubectl apply keeps the whole object
	// in, values included.
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
)

// valueFree returns copies of the two versions of a core Secret with
// every value of data and stringData, and kubectl's copy of the object,
// replaced by a marker, so that a diff says which keys change and not
// what they hold: a key whose value is the same on both sides shows
// SecretValueMarker on both, one that changes shows SecretValueBefore and
// SecretValueAfter. Other objects come back as they are.
func valueFree(key manifest.Key, before, after *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	if key.Group != "" || key.Kind != "Secret" {
		return before, after
	}
	if before != nil {
		before = before.DeepCopy()
	}
	if after != nil {
		after = after.DeepCopy()
	}
	for _, field := range []string{"data", "stringData"} {
		a, b := values(before, field), values(after, field)
		for k, v := range a {
			if w, ok := b[k]; ok && w == v {
				a[k], b[k] = SecretValueMarker, SecretValueMarker
				continue
			}
			a[k] = SecretValueBefore
		}
		for k, v := range b {
			if v != SecretValueMarker {
				b[k] = SecretValueAfter
			}
		}
	}
	for _, obj := range []*unstructured.Unstructured{before, after} {
		if obj == nil {
			continue
		}
		if ann := obj.GetAnnotations(); ann[lastApplied] != "" {
			ann[lastApplied] = SecretValueMarker
			obj.SetAnnotations(ann)
		}
	}
	return before, after
}

// values is the map of obj's field, changed in place; nil for none.
func values(obj *unstructured.Unstructured, field string) map[string]any {
	if obj == nil {
		return nil
	}
	m, _ := obj.Object[field].(map[string]any)
	return m
}
