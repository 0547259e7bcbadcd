package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/fields"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// statefulSetForbidden is how the API server refuses a change to a field
// of a StatefulSet's spec it does not update in place: with the spec as
// the field, not the one changed.
const statefulSetForbidden = "updates to statefulset spec for fields other than"

// statefulSetFixed are the fields of a StatefulSet's spec that the API
// server does not update, in the order a refusal names them.
var statefulSetFixed = []string{"selector", "serviceName", "podManagementPolicy", "volumeClaimTemplates"}

// isStatefulSet reports whether it is an apps StatefulSet.
func isStatefulSet(it *Item) bool {
	gvk := it.Object.Obj.GroupVersionKind()
	return gvk.Group == "apps" && gvk.Kind == "StatefulSet"
}

// statefulSetRejection is the refusal of a change to a fixed field of
// StatefulSet it, naming the field it finds changed against the live
// object (read again: the plan kept only its identity), and the way out:
// plimsoll.dev/force recreates it without its pods, unless its selector
// changed, which no recreation can carry (the pods it runs would not be
// adopted, and the new ones would take their names).
func (a *Applier) statefulSetRejection(ctx context.Context, it *Item, err error) error {
	field := "spec"
	live, gerr := a.resource(it).Get(ctx, it.Object.Obj.GetName(), metav1.GetOptions{})
	if gerr == nil {
		if f := changedFixedField(live, it.Object.Obj); f != "" {
			field = f
		}
	}
	advice := fmt.Sprintf("set annotation %s: \"true\" on it to delete it leaving its pods and their volumes, and create it again: the new StatefulSet adopts them, none restarted", contract.AnnotationForce)
	if strings.HasPrefix(field, "spec.selector") {
		advice = "a StatefulSet's selector cannot change, with " + contract.AnnotationForce + " or without: created again with another one, it could leave its pods unadopted, holding the names its new pods need; add the changed StatefulSet under another name, and remove this one in a later commit"
	}
	reason := fmt.Sprintf("dry-run %s: the API server does not change it on a live StatefulSet (%v); %s", it.Key(), err, advice)
	return &manifest.Error{Origin: it.Object.Origin, Field: field, Reason: reason}
}

// forcedStatefulSet reports whether the refused change to StatefulSet it
// may be carried by recreating it: its selector unchanged.
func (a *Applier) forcedStatefulSet(ctx context.Context, it *Item) bool {
	live, err := a.resource(it).Get(ctx, it.Object.Obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && !strings.HasPrefix(changedFixedField(live, it.Object.Obj), "spec.selector")
}

// changedFixedField is the path of the first fixed field of a StatefulSet
// that want sets and live does not hold (see fields.Hold), down to the
// leaf: "spec.volumeClaimTemplates[0].spec.resources.requests.storage".
// "" when none is.
func changedFixedField(live, want *unstructured.Unstructured) string {
	for _, name := range statefulSetFixed {
		w, ok, _ := unstructured.NestedFieldNoCopy(want.Object, "spec", name)
		if !ok {
			continue
		}
		l, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", name)
		if path := firstChange(l, w, "spec."+name); path != "" {
			return path
		}
	}
	return ""
}

// firstChange is the path, from path, of the first field of want that
// got does not hold; "" when got holds it all.
func firstChange(got, want any, path string) string {
	if fields.Hold(map[string]any{"v": got}, map[string]any{"v": want}) {
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if p := firstChange(g[k], w[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			return path
		}
		for i := range w {
			if p := firstChange(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return path
}

// isStatefulSetFixed reports whether err is the API server's refusal of a
// change to a fixed field of a StatefulSet.
func isStatefulSetFixed(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), statefulSetForbidden)
}
