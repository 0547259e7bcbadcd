package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Scope answers, from the cluster's discovery, whether a kind is served and
// namespaced.
type Scope interface {
	// Namespaced reports whether gvk is namespaced. It returns an error
	// wrapping ErrUnknownKind if the cluster does not serve gvk, and another
	// error if it cannot tell.
	Namespaced(gvk schema.GroupVersionKind) (bool, error)
}

// Validate checks every object and returns all the problems at once, joined
// with errors.Join, so that a user sees them together; nil if there are
// none. Problems with the objects are *Error; an error of scope other than
// ErrUnknownKind is returned wrapped, once per kind.
//
// It checks that apiVersion, kind and metadata.name are set and well formed
// (names as the API server checks them, for the kinds whose rule is known);
// that the cluster serves each kind, or a CustomResourceDefinition among
// objs defines it, whose spec.scope then decides whether it is namespaced;
// and that no two objects have the same Key, naming both origins.
//
// Namespaced objects without metadata.namespace get defaultNamespace, set on
// the objects in place; an empty defaultNamespace makes that an error. A
// cluster-scoped object that sets a namespace is an error. scope must not be
// nil.
func Validate(objs []Object, scope Scope, defaultNamespace string) error {
	v := &validator{scope: scope, defaultNamespace: defaultNamespace, crds: map[schema.GroupKind]crdInfo{}, lookups: map[schema.GroupVersionKind]lookup{}}
	checked := make([]checkedObject, len(objs))
	for i, o := range objs {
		checked[i] = v.fields(o)
	}
	for _, c := range checked {
		if c.gvkOK && c.gvk.Group == crdGroup && c.gvk.Kind == crdKind {
			v.indexCRD(c.Object)
		}
	}
	for _, c := range checked {
		if c.gvkOK {
			v.placeNamespace(c)
		}
	}
	v.duplicates(checked)
	return v.result()
}

// Confine refuses every object a daemon limited to namespaces may not
// write: a namespaced object of another namespace (field
// metadata.namespace) and any cluster-scoped object (field kind). objs
// must have passed Validate, so that a namespaced object has its namespace
// and a cluster-scoped one has none. An empty namespaces allows every
// object.
func Confine(objs []Object, namespaces []string) error {
	if len(namespaces) == 0 {
		return nil
	}
	allowed := strings.Join(namespaces, ", ")
	var errs []error
	for _, o := range objs {
		switch ns := o.Obj.GetNamespace(); {
		case ns == "":
			errs = append(errs, &Error{Origin: o.Origin, Field: "kind", Reason: fmt.Sprintf(
				"%s is cluster-scoped, and this daemon may write only in namespaces %s", o.Obj.GetKind(), allowed)})
		case !slices.Contains(namespaces, ns):
			errs = append(errs, &Error{Origin: o.Origin, Field: "metadata.namespace", Reason: fmt.Sprintf(
				"%q is not among the namespaces this daemon may write in (%s)", ns, allowed)})
		}
	}
	return errors.Join(errs...)
}

// validator holds the state of one Validate.
type validator struct {
	scope            Scope
	defaultNamespace string
	// crds are the kinds defined by CustomResourceDefinitions in the set.
	crds map[schema.GroupKind]crdInfo
	// lookups memoizes the answers of scope.
	lookups map[schema.GroupVersionKind]lookup
	// problems are *Error; failures are errors of scope.
	problems []*Error
	failures []error
}

// checkedObject is an object with what its fields said.
type checkedObject struct {
	Object
	gvk schema.GroupVersionKind
	// gvkOK, nameOK and nsOK say that apiVersion and kind, metadata.name,
	// and metadata.namespace are well formed.
	gvkOK, nameOK, nsOK bool
}

// crdInfo is what a CustomResourceDefinition in the set says of its kind.
type crdInfo struct {
	origin     Origin
	namespaced bool
	versions   []string
}

// lookup is one memoized answer of scope.
type lookup struct {
	namespaced bool
	err        error
}

func (v *validator) problem(origin Origin, field, reason string) {
	v.problems = append(v.problems, &Error{Origin: origin, Field: field, Reason: reason})
}

// result joins the problems, in the order of their origins, and then the
// failures of scope.
func (v *validator) result() error {
	slices.SortStableFunc(v.problems, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.Origin.File, b.Origin.File), cmp.Compare(a.Origin.Doc, b.Origin.Doc), cmp.Compare(a.Origin.Item, b.Origin.Item))
	})
	errs := make([]error, 0, len(v.problems)+len(v.failures))
	for _, p := range v.problems {
		errs = append(errs, p)
	}
	return errors.Join(append(errs, v.failures...)...)
}

// fields checks apiVersion, kind, metadata.name and metadata.namespace.
func (v *validator) fields(o Object) checkedObject {
	c := checkedObject{Object: o}
	if o.Obj == nil || o.Obj.Object == nil {
		v.problem(o.Origin, "", "the object is empty")
		return c
	}
	m := o.Obj.Object
	apiVersion, okAPI := v.requiredString(o.Origin, m, "apiVersion", "apiVersion")
	kind, okKind := v.requiredString(o.Origin, m, "kind", "kind")
	if okAPI {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || !validGroupVersion(gv, apiVersion) {
			v.problem(o.Origin, "apiVersion", fmt.Sprintf("%q is not a valid group/version", apiVersion))
			okAPI = false
		}
		c.gvk = gv.WithKind(kind)
	}
	c.gvkOK = okAPI && okKind
	meta, ok := m["metadata"].(map[string]any)
	if !ok && m["metadata"] != nil {
		v.problem(o.Origin, "metadata", "must be an object (a map)")
		return c
	}
	if name, ok := v.requiredString(o.Origin, meta, "name", "metadata.name"); ok {
		if msgs := nameProblems(c.gvk.GroupKind(), name); len(msgs) > 0 {
			v.problem(o.Origin, "metadata.name", fmt.Sprintf("%q is not a valid name: %s", name, strings.Join(msgs, "; ")))
		} else {
			c.nameOK = true
		}
	}
	switch ns := meta["namespace"].(type) {
	case nil, string:
		c.nsOK = true
		if s, _ := ns.(string); s != "" {
			if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
				v.problem(o.Origin, "metadata.namespace", fmt.Sprintf("%q is not a valid namespace: %s", s, strings.Join(msgs, "; ")))
				c.nsOK = false
			}
		}
	default:
		v.problem(o.Origin, "metadata.namespace", "must be a string")
	}
	return c
}

// requiredString returns m[key] if it is a non-empty string, and otherwise
// records the problem with field.
func (v *validator) requiredString(origin Origin, m map[string]any, key, field string) (string, bool) {
	switch s := m[key].(type) {
	case nil:
		v.problem(origin, field, "is required")
	case string:
		if s == "" {
			v.problem(origin, field, "is required")
			return "", false
		}
		return s, true
	default:
		v.problem(origin, field, "must be a string")
	}
	return "", false
}

// validGroupVersion reports whether gv, parsed from apiVersion, names a
// group (a DNS subdomain, or none) and a version (a DNS label).
func validGroupVersion(gv schema.GroupVersion, apiVersion string) bool {
	if gv.Version == "" || len(validation.IsDNS1035Label(gv.Version)) > 0 {
		return false
	}
	if gv.Group == "" {
		return !strings.Contains(apiVersion, "/")
	}
	return len(validation.IsDNS1123Subdomain(gv.Group)) == 0
}

// nameProblems checks a name by the rule of its kind: a DNS label for
// Namespaces, an RFC 1035 label for Services, a path segment for RBAC
// objects (whose names may hold ':'), and a DNS subdomain for the other
// built-in kinds and custom resources. Kinds of other API groups, whose rule
// is not known here, need only a name that can be part of a URL path.
func nameProblems(gk schema.GroupKind, name string) []string {
	switch {
	case gk.Group == "" && gk.Kind == "Namespace":
		return validation.IsDNS1123Label(name)
	case gk.Group == "" && gk.Kind == "Service":
		return validation.IsDNS1035Label(name)
	case gk.Group == "rbac.authorization.k8s.io":
		return pathSegmentProblems(name)
	case builtinGroup(gk.Group):
		return validation.IsDNS1123Subdomain(name)
	default:
		msgs := pathSegmentProblems(name)
		if len(name) > validation.DNS1123SubdomainMaxLength {
			msgs = append(msgs, validation.MaxLenError(validation.DNS1123SubdomainMaxLength))
		}
		return msgs
	}
}

// pathSegmentProblems checks that a name can be one segment of a URL path,
// the least the API server asks of any name.
func pathSegmentProblems(name string) []string {
	var msgs []string
	if name == "." || name == ".." {
		msgs = append(msgs, fmt.Sprintf("may not be %q", name))
	}
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			msgs = append(msgs, fmt.Sprintf("may not contain %q", bad))
		}
	}
	return msgs
}

// builtinGroup reports whether group is one of the API groups of Kubernetes
// itself whose objects are named as DNS subdomains.
func builtinGroup(group string) bool {
	switch group {
	case "", "apps", "batch", "autoscaling", "policy", "networking.k8s.io",
		"storage.k8s.io", "scheduling.k8s.io", "node.k8s.io", "discovery.k8s.io",
		"coordination.k8s.io", "admissionregistration.k8s.io", crdGroup:
		return true
	}
	return false
}

// indexCRD records the kind a CustomResourceDefinition defines, and what
// is wrong with it.
func (v *validator) indexCRD(o Object) {
	m := o.Obj.Object
	spec, _ := m["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	group, okGroup := v.requiredString(o.Origin, spec, "group", "spec.group")
	kind, okKind := v.requiredString(o.Origin, names, "kind", "spec.names.kind")
	scope, _ := spec["scope"].(string)
	if scope != scopeNamespaced && scope != scopeCluster {
		v.problem(o.Origin, "spec.scope", fmt.Sprintf("must be %q or %q", scopeNamespaced, scopeCluster))
		return
	}
	if !okGroup || !okKind {
		return
	}
	info := crdInfo{origin: o.Origin, namespaced: scope == scopeNamespaced}
	if versions, ok := spec["versions"].([]any); ok {
		for _, ver := range versions {
			ver, _ := ver.(map[string]any)
			if name, _ := ver["name"].(string); name != "" && ver["served"] != false {
				info.versions = append(info.versions, name)
			}
		}
	} else if name, _ := spec["version"].(string); name != "" {
		info.versions = []string{name}
	}
	v.crds[schema.GroupKind{Group: group, Kind: kind}] = info
}

// placeNamespace finds whether the object is namespaced, sets the default
// namespace on it or refuses the namespace it sets.
func (v *validator) placeNamespace(c checkedObject) {
	namespaced, ok := v.namespaced(c)
	if !ok || !c.nsOK {
		return
	}
	ns := c.Obj.GetNamespace()
	def := v.defaultNamespace
	if c.DefaultNamespace != "" {
		def = c.DefaultNamespace
	}
	switch {
	case namespaced && ns == "" && def == "":
		v.problem(c.Origin, "metadata.namespace", "is required: the kind is namespaced and there is no default namespace")
	case namespaced && ns == "":
		c.Obj.SetNamespace(def)
	case !namespaced && ns != "":
		v.problem(c.Origin, "metadata.namespace", fmt.Sprintf("must not be set: %s is cluster-scoped", c.gvk.Kind))
	}
}

// namespaced answers from the CustomResourceDefinitions in the set, or else
// from the cluster; ok is false when there is no answer, the problem then
// being recorded.
func (v *validator) namespaced(c checkedObject) (namespaced, ok bool) {
	if crd, found := v.crds[c.gvk.GroupKind()]; found {
		if len(crd.versions) > 0 && !slices.Contains(crd.versions, c.gvk.Version) {
			v.problem(c.Origin, "apiVersion", fmt.Sprintf("version %q is not served by the CustomResourceDefinition in %s", c.gvk.Version, crd.origin))
			return false, false
		}
		return crd.namespaced, true
	}
	l, seen := v.lookups[c.gvk]
	if !seen {
		l.namespaced, l.err = v.scope.Namespaced(c.gvk)
		v.lookups[c.gvk] = l
	}
	switch {
	case errors.Is(l.err, ErrUnknownKind):
		v.problem(c.Origin, "kind", fmt.Sprintf("%s %s is not served by the cluster, and no CustomResourceDefinition in the set defines it",
			c.gvk.GroupVersion(), c.gvk.Kind))
		return false, false
	case l.err != nil:
		if !seen {
			v.failures = append(v.failures, fmt.Errorf("look up whether %s %s is namespaced: %w", c.gvk.GroupVersion(), c.gvk.Kind, l.err))
		}
		return false, false
	}
	return l.namespaced, true
}

// duplicates refuses a second object with the key of an earlier one.
func (v *validator) duplicates(checked []checkedObject) {
	first := map[Key]Origin{}
	for _, c := range checked {
		if !c.gvkOK || !c.nameOK {
			continue
		}
		key := c.Key()
		if origin, dup := first[key]; dup {
			v.problem(c.Origin, "", fmt.Sprintf("%s is also defined in %s", key, origin))
			continue
		}
		first[key] = c.Origin
	}
}
