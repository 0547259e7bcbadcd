package manifest

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Origin says where an object came from.
type Origin struct {
	// File is the slash path relative to the repository root; for objects
	// built by kustomize, the kustomization file.
	File string
	// Doc is the 1-based index of the YAML document within File; for objects
	// built by kustomize, the index in the build output. Zero means the
	// origin is the whole file.
	Doc int
	// Item is the 1-based index of the object in the items of a List
	// document, zero when the document is not a List.
	Item int
}

// String names the origin for people: "apps/web.yaml, document 2", with
// ", item 3" added for an object read from a List.
func (o Origin) String() string {
	file := o.File
	if file == "" {
		file = "(unknown file)"
	}
	var b strings.Builder
	b.WriteString(file)
	if o.Doc > 0 {
		b.WriteString(", document ")
		b.WriteString(strconv.Itoa(o.Doc))
	}
	if o.Item > 0 {
		b.WriteString(", item ")
		b.WriteString(strconv.Itoa(o.Item))
	}
	return b.String()
}

// Object is one Kubernetes object of the manifest tree.
type Object struct {
	// Obj holds only JSON-compatible values: maps with string keys, slices,
	// strings, int64, float64, bool and nil.
	Obj *unstructured.Unstructured
	// Origin is where Obj was read.
	Origin Origin
	// Release is the chart release that rendered the object, nil for an
	// object read from a file or a kustomization.
	Release *ChartRelease
	// DefaultNamespace, when set, is the namespace Validate gives the
	// object if it is namespaced and sets none, in place of the sync's: a
	// chart's release namespace.
	DefaultNamespace string
	// CreateOnly marks an object that is created when absent and never
	// updated: a CustomResourceDefinition of a chart's crds/ folder under
	// the Create policy.
	CreateOnly bool
}

// Key identifies an object for duplicates, inventory and prune: group, kind,
// namespace and name. The API version is not part of it, since one object is
// served under several versions.
type Key struct{ Group, Kind, Namespace, Name string }

// Key returns the object's key as it stands; Validate sets default
// namespaces first, so keys taken after it are final. A nil Obj has the zero
// Key.
func (o Object) Key() Key {
	if o.Obj == nil {
		return Key{}
	}
	gvk := o.Obj.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName()}
}

// String formats the key as "group/Kind namespace/name", leaving out an
// empty group or namespace: "apps/Deployment default/web",
// "ConfigMap default/cfg", "Namespace team-a".
func (k Key) String() string {
	var b strings.Builder
	if k.Group != "" {
		b.WriteString(k.Group)
		b.WriteByte('/')
	}
	b.WriteString(k.Kind)
	b.WriteByte(' ')
	if k.Namespace != "" {
		b.WriteString(k.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(k.Name)
	return b.String()
}
